"""Every setting is documented in the README and in .env.example."""

from rag.settings import Settings

from .conftest import ROOT


def env_names() -> list[str]:
    names = []
    for field_name, f in Settings.model_fields.items():
        alias = f.validation_alias
        names.append(alias.choices[0] if alias is not None else f"PAPERS_{field_name.upper()}")
    return names


def test_every_setting_is_documented() -> None:
    readme = (ROOT / "README.md").read_text()
    example = (ROOT / ".env.example").read_text()
    missing = [n for n in env_names() if f"`{n}`" not in readme or f"{n}=" not in example]
    assert not missing, missing
