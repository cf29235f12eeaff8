"""A corpus no rule or constant was written for: abstracts about invented methods in an invented field, ingested
for real (real embedder, real Chroma, real local index) by the answerer's and the chat's tests."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import make_settings, write_jsonl

SYNTHETIC = [
    ("Glacier soil microbes under warming",
     "Permafrost soils hold microbial communities whose response to warming is poorly characterised. "
     "We introduce Frostline Metagenomic Profiling (FMP), a sequencing protocol that tracks microbial "
     "turnover across thaw depth. FMP recovers 3,400 microbial genomes from twelve permafrost cores. "
     "Thaw depth explains most of the turnover in microbial composition."),
    ("Lichen pigments as UV shields",
     "Lichens living on exposed rock produce pigments that absorb ultraviolet light. "
     "We propose Umbra Pigment Assay (UPA), a field assay that scores pigment density from phone photographs. "
     "UPA correlates with laboratory spectrometry at r = 0.91 across 210 lichen samples. "
     "Pigment density rises with altitude in every surveyed mountain range."),
    ("Moss hydration sensing",
     "Mosses dry out and revive many times a season, but their hydration is hard to measure in the field. "
     "We present Hydroleaf, a capacitive sensor clipped onto moss cushions. "
     "Hydroleaf uses the Frostline Metagenomic Profiling (FMP) cores as reference sites. "
     "Hydroleaf logs hydration every minute for six months on one battery."),
    ("Fungal networks between trees",
     "Mycorrhizal fungi connect the roots of neighbouring trees into shared networks. "
     "We describe Rootweave, an isotope tracing method that follows carbon moving through fungal networks. "
     "Rootweave shows that seedlings in shade receive 18% of their carbon from older trees. "
     "Carbon transfer stops when the fungal network is cut."),
    ("Alpine pollinator decline",
     "Alpine meadows are losing pollinators as summers warm. "
     "We count bumblebee visits on 40 meadows over nine years with camera traps. "
     "Visits dropped by 27% while flowering started eleven days earlier. "
     "Late-flowering plants lost the most visits."),
    ("Soil carbon under grazing",
     "Grazing changes how much carbon grassland soils store. "
     "Across 65 paired plots, moderate grazing increased topsoil carbon by 9% compared with exclusion. "
     "Heavy grazing reduced soil carbon in dry sites but not in wet ones."),
    ("Dune recovery after storms",
     "Coastal dunes erode during storms, and existing surveys miss how fast they recover. "
     "We introduce Sandmark, which addresses this gap through two complementary components. "
     "First, buried magnetic tags record how deep each storm strips the sand. "
     "Second, weekly drone photogrammetry maps the dune surface between storms. "
     "Across 14 beaches, Sandmark recovers erosion depth with 92% accuracy and shows dunes recovering three "
     "times faster than earlier estimates."),
]


def synthetic_assistant(folder: Path):  # noqa: ANN201 - rag.service.Assistant
    """The synthetic corpus ingested into `folder`, and an assistant over it."""
    from rag.index.ingest import ingest
    from rag.service import Assistant

    write_jsonl(folder / "papers.jsonl", [{"title": t, "abstract": a} for t, a in SYNTHETIC])
    settings = make_settings(folder / "data", corpus_paths=[folder / "papers.jsonl"], answer_mode="extractive")
    report = ingest(settings, progress=False)
    assert report.total_papers == len(SYNTHETIC)
    return Assistant(settings)
