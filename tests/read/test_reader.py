"""The reader: the shipped model loads offline and reads (question, passage) pairs; the fitting script runs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from rag.read.model import FITTED, META_FILE, MODEL_FILE, load_reader
from rag.read.passages import passage_text

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"


def test_the_shipped_reader_is_package_data_with_its_figures_and_command() -> None:
    meta = json.loads((FITTED / META_FILE).read_text())
    assert (FITTED / MODEL_FILE).stat().st_size < 40 * 2**20
    assert meta["command"].startswith("python eval/fit_reader.py")
    assert {"scale", "bias"} <= set(meta["calibration"]) and meta["held_out_folds"] == [0]
    tuned = meta["held_out"]["tuned"]
    assert tuned["qasper_evidence_f1_top1"] > 0.15  # held out; the bundled model untuned reads 0.133


def test_the_reader_ranks_the_passage_that_answers_first() -> None:
    reader = load_reader()
    assert reader is not None
    cases = [
        ("Which datasets are used for evaluation?",
         [passage_text("1 Introduction", "Discourse parsing is a core task of natural language understanding."),
          passage_text("4 Experiments", "We evaluate on the PDTB 2.0 and the RST Discourse Treebank datasets."),
          passage_text("Acknowledgements", "We thank the anonymous reviewers for their comments.")], 1),
        ("How many GPUs were used for training?",
         [passage_text("3 Model", "The encoder has twelve layers and a hidden size of 768."),
          passage_text("Conclusion", "We presented a new model for parsing."),
          passage_text("4 Setup", "Training took two days on eight V100 GPUs.")], 2),
    ]
    for question, passages, answer in cases:
        readings = reader.read(question, passages)
        assert max(range(len(passages)), key=lambda i: readings[i].relevance) == answer, question
        assert all(0.0 <= r.probability <= 1.0 for r in readings)


def test_passage_vectors_are_kept_and_give_the_same_readings() -> None:
    reader = load_reader()
    assert reader is not None
    passages = [passage_text("2 Method", "We fine-tune the encoder with a ranking loss.")]
    first = reader.read("How is the encoder trained?", passages)
    assert passages[0] in reader._cache
    assert reader.read("How is the encoder trained?", passages) == first


@pytest.mark.slow
@pytest.mark.skipif(not (SHARED / "qasper" / "qasper_dev.jsonl").exists(), reason="needs ../shared/qasper")
def test_fit_reader_trains_a_reader_on_a_tiny_sample(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT))
    from eval import fit_reader

    out = tmp_path / "reader"
    assert fit_reader.main(["--holdout", "0", "--limit", "3", "--epochs", "0.05", "--out", str(out),
                            "--work", str(tmp_path / "work")]) == 0
    meta = json.loads((out / META_FILE).read_text())
    assert meta["training_triplets"] > 0 and meta["held_out_folds"] == [0]
    assert "bundled_untuned" in meta["held_out"] and "tuned" in meta["held_out"]
    reader = load_reader(str(out))
    assert reader is not None and len(reader.read("a question?", ["Context: a passage."])) == 1


def test_a_passage_reads_the_same_alone_and_among_others() -> None:
    """The int8 graph quantises activations per input tensor: batched passages would change each other."""
    reader = load_reader()
    assert reader is not None
    question = "Which datasets are used for evaluation?"
    target = passage_text("4 Experiments", "We evaluate on the PDTB 2.0 and the RST Discourse Treebank datasets.")
    others = [passage_text(f"{i} Section", "A much longer paragraph about something else entirely, " * (i + 1))
              for i in range(20)]
    alone = load_reader.__wrapped__().read(question, [target])[0]  # a fresh reader: nothing cached
    among = load_reader.__wrapped__().read(question, others + [target])[-1]
    assert alone == among
