"""Every setting is documented in docs/configuration.md and in .env.example; the README stays a short front page
whose links, like those of every docs page, point at files and headings that exist."""

import re
from pathlib import Path

from rag.settings import Settings

from .conftest import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "benchmarks" / "README.md"]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def env_names() -> list[str]:
    names = []
    for field_name, f in Settings.model_fields.items():
        alias = f.validation_alias
        names.append(alias.choices[0] if alias is not None else f"PAPERS_{field_name.upper()}")
    return names


def test_every_setting_is_documented() -> None:
    page = (ROOT / "docs" / "configuration.md").read_text()
    example = (ROOT / ".env.example").read_text()
    missing = [n for n in env_names() if f"`{n}`" not in page or f"{n}=" not in example]
    assert not missing, missing


def test_readme_is_a_front_page() -> None:
    """The details live in docs/; the README keeps what a newcomer needs and links to the rest."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.encode()) <= 20_000
    for needed in ("make run", "make test", "papers ask", "papers chat", "papers cite", "papers list",
                   "papers ingest", "pip install"):
        assert needed in readme, needed
    linked = {m.split("#")[0] for m in LINK.findall(readme)}
    assert {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")} <= linked


def _anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    heads = [line.lstrip("#").strip() for line in page.read_text(encoding="utf-8").splitlines()
             if line.startswith("#")]
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in heads}


def test_links_point_at_files_and_headings_that_exist() -> None:
    broken = []
    for page in PAGES:
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists() or (anchor and dest.suffix == ".md" and anchor not in _anchors(dest)):
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert not broken, broken
