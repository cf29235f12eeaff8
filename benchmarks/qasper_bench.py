"""QASPER full texts: what the reader costs a question, what ingesting full texts costs against encoding them,
and the answer figures on the whole dev split.

    python benchmarks/qasper_bench.py speed [--papers 100]
    python benchmarks/qasper_bench.py quality [--fold K --reader DIR] [--papers N]

`speed` writes N dev papers (a fixed sample) as Markdown, as the QASPER scoring rule does, and measures side by
side in one run: the ingest embedder's bare `embed_texts` of exactly the chunk texts ingest makes (the floor)
against `ingest` of the files; then every question of those papers asked of its own paper twice, with the
reader and with it off (PAPERS_READER_PASSAGES=0), alternating question by question so machine noise falls on
both: the reader's cost is the difference of the p50s.

`quality` is `papers eval --qasper` over the whole dev split (or one fold, answered by a reader trained without
it), printed as the table of eval/qasper.py. Papers are read from ../shared/qasper (never copied here).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from common import ROOT, bench_settings, p50, percentile, table

from eval import qasper

RESULTS = ROOT / "benchmarks" / "results"


def chunk_texts(folder: Path, settings) -> list[str]:  # noqa: ANN001 - rag.settings.Settings
    """Exactly the texts ingest embeds for the files of a folder (its scan, splitter and section re-chunker)."""
    from llama_index.core.schema import MetadataMode

    from rag.corpus.scan import scan
    from rag.index.chunking import SectionChunks
    from rag.index.ingest import make_document, make_splitter

    found = scan([folder], int(settings.max_file_mb * 2**20), settings.max_abstract_chars)
    nodes = make_splitter(settings).get_nodes_from_documents([make_document(p) for p in found.papers])
    nodes = SectionChunks.for_papers(found.papers, settings.chunk_tokens)(nodes)
    return [n.get_content(MetadataMode.EMBED) for n in nodes]


def speed(n_papers: int) -> dict:
    from rag.index.embed import ingest_embedder_for
    from rag.index.ingest import ingest
    from rag.schema import record
    from rag.service import open_assistant

    papers = qasper.sample(qasper.load(), n_papers)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "markdown"
        names = qasper.write_corpus(papers, folder)
        s = bench_settings(Path(tmp) / "data")
        texts = chunk_texts(folder, s)
        embedder = ingest_embedder_for(s)
        embedder.embed_texts(texts[:64])  # warm: the floor and ingest both start with a loaded model
        t = time.perf_counter()
        embedder.embed_texts(texts)
        floor = len(texts) / (time.perf_counter() - t)
        t = time.perf_counter()
        report = ingest(s, [folder], embedder=embedder, progress=False)
        ingest_rate = report.chunks_embedded / (time.perf_counter() - t)
        assert report.chunks_embedded == len(texts), (report.chunks_embedded, len(texts))
        ids = {names[Path(e.source).name]: e.paper_id for e in report_entries(s)}
        on = open_assistant(s)
        off = open_assistant(bench_settings(Path(tmp) / "data", reader_passages=0))
        times: dict[str, list[float]] = {"on": [], "off": []}
        questions = [(q.question, ids[p.id]) for p in papers for q in p.questions if p.id in ids]
        for who in (on, off):  # warm both (the reader loads on first use)
            who.ask(questions[0][0], paper_ids=[questions[0][1]], mode="extractive")
        for i, (q, pid) in enumerate(questions):
            order = (("on", on), ("off", off)) if i % 2 == 0 else (("off", off), ("on", on))
            for name, who in order:
                t = time.perf_counter()
                record(who.ask(q, paper_ids=[pid], mode="extractive"))
                times[name].append(time.perf_counter() - t)
    out = {"papers": len(papers), "chunks": len(texts), "floor_chunks_per_s": floor,
           "ingest_chunks_per_s": ingest_rate, "ingest_ratio": ingest_rate / floor, "questions": len(questions),
           "p50_on_s": p50(times["on"]), "p50_off_s": p50(times["off"]),
           "p95_on_s": percentile(times["on"], 95), "p95_off_s": percentile(times["off"], 95),
           "reader_adds_p50_s": p50(times["on"]) - p50(times["off"]),
           "reader_adds_median_paired_s": statistics.median(a - b for a, b in zip(times["on"], times["off"]))}
    print(f"QASPER dev sample: {len(papers)} papers as Markdown, {len(texts)} chunks, {len(questions)} questions")
    print(table([
        {"measure": "bare encode of the chunk texts (floor)", "value": f"{floor:.1f} chunks/s", "ratio": "1.00"},
        {"measure": "papers ingest of the Markdown files", "value": f"{ingest_rate:.1f} chunks/s",
         "ratio": f"{out['ingest_ratio']:.2f} (goal >= 0.8)"},
        {"measure": "question p50, reader off", "value": f"{out['p50_off_s'] * 1000:.0f} ms", "ratio": ""},
        {"measure": "question p50, reader on", "value": f"{out['p50_on_s'] * 1000:.0f} ms",
         "ratio": f"+{out['reader_adds_p50_s'] * 1000:.0f} ms (goal <= 300 ms)"},
    ], ["measure", "value", "ratio"]))
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"qasper_speed_{n_papers}.json").write_text(json.dumps(out, indent=1))
    return out


def report_entries(settings):  # noqa: ANN001, ANN201 - the store's catalog entries
    from rag.index.store import Store

    return Store.open(settings).catalog(with_text=False).values()


def quality(fold: int | None, reader: Path | None, n_papers: int | None, data: Path) -> dict:
    from rag.schema import record
    from rag.service import open_assistant

    papers = qasper.load()
    if fold is not None:
        papers = [p for p in papers if qasper.fold_of(p.id) == fold]
    if n_papers:
        papers = qasper.sample(papers, n_papers)
    s = bench_settings(data, reader=reader) if reader else bench_settings(data)
    ids = qasper.ensure_ingested(s, papers, data.parent / f"{data.name}-markdown", progress=sys.stderr.isatty())
    assistant = open_assistant(s)
    records = qasper.run([p for p in papers if p.id in ids], ids,
                         lambda q, pid: record(assistant.ask(q, paper_ids=[pid], mode="extractive")))
    summary = qasper.summarise(records) | {"fold": fold, "reader": str(reader or "shipped")}
    print(qasper.table(summary))
    RESULTS.mkdir(parents=True, exist_ok=True)
    name = f"qasper_quality_{'all' if fold is None else f'fold{fold}'}.json"
    (RESULTS / name).write_text(json.dumps({"summary": summary, "records": records}, indent=1))
    return summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    sp = sub.add_parser("speed")
    sp.add_argument("--papers", type=int, default=100)
    qp = sub.add_parser("quality")
    qp.add_argument("--fold", type=int, default=None)
    qp.add_argument("--reader", type=Path, default=None)
    qp.add_argument("--papers", type=int, default=None)
    qp.add_argument("--data", type=Path, default=RESULTS / "qasper-data")
    args = ap.parse_args()
    if args.what == "speed":
        speed(args.papers)
    else:
        quality(args.fold, args.reader, args.papers, args.data)


if __name__ == "__main__":
    main()
