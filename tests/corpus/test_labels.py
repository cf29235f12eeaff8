"""Labels of the 38 corpus papers, checked by eye against each abstract, and the extractor's rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.corpus.labels import extract_label, is_coined
from rag.corpus.scan import scan
from tests.conftest import CORPUS

EXPECTED = {
    ("neurips2026_list_000.txt", 1): "HCMs",
    ("neurips2026_list_000.txt", 2): "Recon",
    ("neurips2026_list_000.txt", 3): "RecMem",
    ("neurips2026_list_000.txt", 4): "RLRT",
    ("neurips2026_list_000.txt", 5): "DyMoS",
    ("neurips2026_list_000.txt", 6): "ReasoningShield",
    ("neurips2026_list_000.txt", 7): "RSP",
    ("neurips2026_list_000.txt", 8): "Reasoning-trace collapse",
    ("neurips2026_list_000.txt", 9): "reasoning-aware IRT",
    ("neurips2026_list_000.txt", 10): "Latent tokens",
    ("neurips2026_list_000.txt", 11): "Entropy-Cut Metropolis–Hastings",
    ("neurips2026_list_000.txt", 12): "CoRF",
    ("neurips2026_list_000.txt", 13): "CIB",
    ("neurips2026_list_000.txt", 14): "Reasoning Warm-up",
    ("neurips2026_list_000.txt", 15): "Reasoning pathologies",
    ("neurips2026_list_000.txt", 16): "Human learning",
    ("neurips2026_list_000.txt", 17): "Realtime-VLA FLASH",
    ("neurips2026_list_000.txt", 18): "RealityTest",
    ("neurips2026_list_000.txt", 19): "Event sequences",
    ("neurips2026_list_002.txt", 1): "ReLoop",
    ("neurips2026_list_002.txt", 2): "Attention patterns",
    ("neurips2026_list_002.txt", 3): "RTCBench",
    ("neurips2026_list_002.txt", 4): "RSPO",
    ("neurips2026_list_002.txt", 5): "RICE-PO",
    ("neurips2026_list_002.txt", 6): "RECAP",
    ("neurips2026_list_002.txt", 7): "Quantized models",
    ("neurips2026_list_002.txt", 8): "CF-Beam",
    ("neurips2026_list_002.txt", 9): "trajectory-probing protocol",
    ("neurips2026_list_002.txt", 10): "PTRM",
    ("neurips2026_list_002.txt", 11): "GRAM",
    ("neurips2026_list_002.txt", 12): "DuST",
    ("neurips2026_list_002.txt", 13): "SLG Search",
    ("neurips2026_list_002.txt", 14): "PotARCin",
    ("neurips2026_list_002.txt", 15): "Intrinsic temporal structure",
    ("neurips2026_list_002.txt", 16): "GMU",
    ("neurips2026_list_002.txt", 17): "CORE",
    ("neurips2026_list_002.txt", 18): "Spectral optimizers",
    ("neurips2026_list_002.txt", 19): "PerturbReason",
}


def test_all_38_labels() -> None:
    papers = scan([CORPUS], 2**26, 20_000).papers
    got = {(Path(p.source).name, p.position): p.label for p in papers}
    assert got == EXPECTED


def test_labels_unique_and_short() -> None:
    labels = list(EXPECTED.values())
    assert len(set(labels)) == len(labels)
    assert all(0 < len(label.split()) <= 5 for label in labels)


@pytest.mark.parametrize("text,expected", [
    ("Tabular models struggle. We present FooBar, a method for tables that works well in practice.", "FooBar"),
    ("Tabular models struggle. We introduce Sparse Tabular Attention (STA), which scales to millions of rows.", "STA"),
    ("Long documents are hard. We call this phenomenon Context Rot and we measure it carefully.", "Context Rot"),
    ("Tabular models struggle. Our ZTab model is simple. ZTab wins on every benchmark we try here.", "ZTab"),
])
def test_named_contributions(text: str, expected: str) -> None:
    assert extract_label(text) == expected


def test_topic_when_nothing_is_named() -> None:
    text = ("Graph neural networks over-smooth. We study over-smoothing in deep graph networks and show that "
            "residual connections delay over-smoothing in deep graph networks of any width.")
    label = extract_label(text)
    assert label and "graph" in label.lower()


def test_title_is_used_when_abstract_names_nothing() -> None:
    assert extract_label("We study many things in depth across several settings and report results.",
                         title="ZebraNet: Striped Networks for Vision") == "ZebraNet"


def test_coined_names_are_recognised_by_their_shape() -> None:
    # Whether an acronym is the field's vocabulary ("LLM") is decided from the corpus (rag/evidence.Vocabulary),
    # not from a list here: the shape alone says "coined".
    assert is_coined("RecMem") and is_coined("CF-Beam") and is_coined("GRPO")
    assert not is_coined("Adam") and not is_coined("x") and not is_coined("model")


def test_a_plural_acronym_is_not_the_papers_own_name() -> None:
    text = ("Humans learn fast. We compare frontier Large Reasoning Models (LRMs) against agents. "
            "LRMs match humans. LRMs also predict brain activity. The LRMs are strong.")
    assert extract_label(text) != "LRMs"
