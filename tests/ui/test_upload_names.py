"""An upload never replaces an earlier upload of another file with the same name (its papers would go)."""

from __future__ import annotations

from pathlib import Path

from ui.app import upload_target


def test_an_upload_keeps_its_name_or_gets_a_numbered_one(tmp_path: Path) -> None:
    kept = tmp_path / "uploads"
    kept.mkdir()
    a, b = tmp_path / "a.bib", tmp_path / "b.bib"
    a.write_text("@article{a, title={A}, abstract={First.}}")
    b.write_text("@article{b, title={B}, abstract={Second.}}")
    assert upload_target(kept, "refs.bib", a) == kept / "refs.bib"
    (kept / "refs.bib").write_bytes(a.read_bytes())
    assert upload_target(kept, "refs.bib", a) == kept / "refs.bib"      # the same file again: found, not copied
    assert upload_target(kept, "refs.bib", b) == kept / "refs (2).bib"  # other content: a name of its own
    (kept / "refs (2).bib").write_bytes(b.read_bytes())
    assert upload_target(kept, "refs.bib", b) == kept / "refs (2).bib"
