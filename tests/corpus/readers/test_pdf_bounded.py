"""A PDF is parsed in a worker with a memory and a time budget: a decompression bomb or a stuck parse costs
that file one clear line, never the ingest; a normal PDF parses exactly as in-process."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest

from rag.corpus.readers.pdf import parse_pdf
from rag.corpus.readers.pdf_bounded import parse_bounded
from rag.corpus.records import CorpusError
from rag.corpus.scan import read_file

SHARED_PDF = Path(__file__).resolve().parents[3].parent / "shared" / "real-pdfs" / "woo-2018-cbam.pdf"


def bomb(path: Path, decompressed_mb: int) -> Path:
    """One page whose content stream inflates to `decompressed_mb` MB from about 1/300 of that on disk."""
    co = zlib.compressobj(9)
    line = b"BT /F1 12 Tf 72 720 Td (A) Tj ET\n"
    chunk = line * (2**20 // len(line))
    body = b"".join(co.compress(chunk) for _ in range(decompressed_mb)) + co.flush()
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
            b"/Resources << /Font << /F1 5 0 R >> >> >>",
            b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(body) + body + b"\nendstream",
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for i, obj in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + obj + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    path.write_bytes(bytes(out))
    return path


def test_a_decompression_bomb_is_stopped_with_one_line(tmp_path: Path) -> None:
    pdf = bomb(tmp_path / "bomb.pdf", 300)  # ~1 MB on disk; PDFium needs over 4 GB for it unbounded
    assert pdf.stat().st_size < 2 * 2**20
    with pytest.raises(CorpusError, match=r"needs more than 768 MB of memory"):
        parse_bounded(parse_pdf, pdf, memory_mb=768)


def test_the_bomb_in_an_ingested_folder_is_one_skipped_file(tmp_path: Path) -> None:
    bomb(tmp_path / "bomb.pdf", 400)  # under the default budget (2 GB), as `papers ingest` and uploads read it
    report = read_file(tmp_path / "bomb.pdf", 64 * 2**20, 10**6)
    assert report.papers == [] and len(report.problems) == 1, report.problems
    assert "decompression bomb" in report.problems[0]


def test_a_parse_over_its_time_is_stopped_and_the_next_one_runs(tmp_path: Path) -> None:
    pdf = bomb(tmp_path / "slow.pdf", 40)
    with pytest.raises(CorpusError, match=r"took longer than 0.01 s"):
        parse_bounded(parse_pdf, pdf, seconds=0.01)
    with pytest.raises(CorpusError, match="no text layer"):  # a fresh worker reads the next file
        parse_bounded(parse_pdf, pdf)


@pytest.mark.skipif(not SHARED_PDF.exists(), reason="needs ../shared/real-pdfs")
def test_a_real_pdf_parses_as_in_process() -> None:
    assert parse_bounded(parse_pdf, SHARED_PDF) == parse_pdf(SHARED_PDF)
