"""Settings: defaults, environment names, and clear errors for bad values."""

from pathlib import Path

import pytest

from rag.settings import SettingsError, load_settings


def test_defaults_are_offline_and_local() -> None:
    s = load_settings(_env_file=None)
    assert s.effective_answer_mode == "extractive"
    assert s.chroma_host is None and s.ui_host == "127.0.0.1"


def test_conventional_env_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHROMA_HOST", "127.0.0.1")
    monkeypatch.setenv("CHROMA_PORT", "8123")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("PAPERS_TOP_K", "7")
    s = load_settings(_env_file=None)
    assert (s.chroma_host, s.chroma_port, s.top_k) == ("127.0.0.1", 8123, 7)
    assert s.effective_answer_mode == "llm"


def test_env_file_is_read(tmp_path: Path) -> None:
    env = tmp_path / ".env"
    env.write_text("PAPERS_TOP_K=3\nPAPERS_ANSWER_MODE=extractive\n")
    assert load_settings(_env_file=env).top_k == 3


@pytest.mark.parametrize("var,value,name", [
    ("PAPERS_ANSWER_MODE", "magic", "PAPERS_ANSWER_MODE"),
    ("PAPERS_TOP_K", "-1", "PAPERS_TOP_K"),
    ("CHROMA_PORT", "99999", "CHROMA_PORT"),
    ("PAPERS_UI_PORT", "http", "PAPERS_UI_PORT"),
])
def test_bad_values_name_the_variable(monkeypatch: pytest.MonkeyPatch, var: str, value: str, name: str) -> None:
    monkeypatch.setenv(var, value)
    with pytest.raises(SettingsError) as e:
        load_settings(_env_file=None)
    assert name in str(e.value) and value in str(e.value)


def test_secrets_never_appear_in_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAPERS_UI_AUTH", "alice:s3cret-pass")
    monkeypatch.setenv("PAPERS_TOP_K", "0")
    with pytest.raises(SettingsError) as e:
        load_settings(_env_file=None)
    assert "s3cret" not in str(e.value)
    assert "s3cret" not in repr(load_settings(_env_file=None, top_k=2))


@pytest.mark.parametrize("variable, value, says", [
    ("PAPERS_CORPUS_PATHS", "[not json", "is not a JSON list of paths"),
    ("PAPERS_MAX_FILE_MB", "inf", "less than or equal to 4096"),
    ("PAPERS_LLM_TIMEOUT_S", "inf", "less than or equal to 3600"),
    ("PAPERS_DATA_DIR", "", "is empty"),
    ("PAPERS_DATA_DIR", "~nosuchuser-x7/data", "cannot be expanded"),
    ("PAPERS_RETRIEVAL_FIT", "/dev/null", "is not a readable JSON file"),
])
def test_each_bad_setting_is_named(monkeypatch: pytest.MonkeyPatch, variable: str, value: str, says: str) -> None:
    from rag.settings import SettingsError

    monkeypatch.setenv(variable, value)
    with pytest.raises(SettingsError) as e:
        load_settings(_env_file=None)
    assert variable in str(e.value) and says in str(e.value)


def test_a_data_dir_that_is_a_file_and_plain_corpus_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from rag.settings import SettingsError, check_host

    (tmp_path / "f").write_text("x")
    monkeypatch.setenv("PAPERS_DATA_DIR", str(tmp_path / "f"))
    with pytest.raises(SettingsError, match="PAPERS_DATA_DIR: is a file, not a folder"):
        load_settings(_env_file=None)
    monkeypatch.setenv("PAPERS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("PAPERS_CORPUS_PATHS", f"corpus{os.pathsep}more")
    assert load_settings(_env_file=None).corpus_paths == [Path("corpus"), Path("more")]
    with pytest.raises(SettingsError, match="PAPERS_UI_HOST: cannot resolve"):
        check_host("PAPERS_UI_HOST", "no-such-host.invalid", 7860)
