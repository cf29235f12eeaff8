"""The papers grid: the column model on its own (fitted file, features, choices), Assistant.grid on the synthetic
corpus and on the seed corpus, the records and tables it renders, and the eval on the hand labels."""

from __future__ import annotations

import csv
import io
import json

import pytest

from rag.answer import grid as g
from rag.errors import QuestionError
from rag.schema import Grid, GridCell, GridRow, record

from tests.synthetic import SYNTHETIC, synthetic_assistant

SANDMARK = SYNTHETIC[-1][1]


def test_fitted_model_has_every_column_and_feature() -> None:
    model = g.load_model()
    assert set(model.columns) == set(g.COLUMNS)
    for m in model.columns.values():
        assert set(m.weights) == set(g.FEATURES) and 0.0 <= m.stated_at <= 1.01 and m.cues
    assert "SciFact" in model.meta["fitted_on"] and "PDFs" in model.meta["fitted_on"]
    assert set(model.meta["cross_validation"]["scifact"]) == set(g.COLUMNS)
    assert set(model.meta["cross_validation"]["pdfs"]) == set(g.COLUMNS)


def test_discourse_features() -> None:
    sentences = ["Unfortunately, no unbiased estimator exists.",
                 "In this paper, we propose a new estimator built on weighted means.",
                 "This paper describes a simple detector.",
                 "We propose that the effect is small.",  # a claim, still a contribution statement by its form
                 "We validate it on three benchmarks and two datasets.",
                 "The weather was mild."]
    f = g.sentence_features(sentences, [0.0] * 6, {}, g.COLUMNS["data"])
    assert [x["contrast"] for x in f] == [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    assert [x["contribution"] for x in f] == [0.0, 1.0, 1.0, 1.0, 0.0, 0.0]
    # the data column's own words ("datasets", "benchmarks") in any inflection
    assert f[4]["column_words"] == 1.0 and f[5]["column_words"] == 0.0
    assert g.column_stems(g.COLUMNS["method"]) == {"metho", "appro", "propo"}
    # without a question no word is the column's
    assert all(x["column_words"] == 0.0 for x in g.sentence_features(sentences, [0.0] * 6, {}))


def test_data_source_feature() -> None:
    named = ["We validate our module through experiments on ImageNet-1K and MS COCO.",   # after a ran-on phrase
             "Experiments using all labeled data of Librispeech reach a low error rate.",  # beside a data noun
             "Participants came from the Framingham Heart Study cohort.",
             "It reduces errors by 9.6% in the XSum summarization task."]                 # a named task
    unnamed = ["We achieve state-of-the-art results on three benchmarks.",  # a data noun, no name
               "We evaluate the model on several tasks.",                   # "task" alone is no data noun
               "We propose a new estimator built on weighted means."]
    assert all(g.data_source(s)[1] for s in named)
    assert [g.data_source(s) for s in unnamed] == [(True, False), (False, False), (False, False)]
    f = g.sentence_features(named[:1] + unnamed[:1], [0.0, 0.0], {}, g.COLUMNS["data"])
    assert [(x["data_noun"], x["names_data"]) for x in f] == [(0.0, 1.0), (1.0, 0.0)]


def test_features_and_choice_on_an_abstract() -> None:
    sentences = g.paper_sentences(SANDMARK)
    assert len(sentences) == 5
    f = g.sentence_features(sentences, [0.0] * 5, {"<pct>": 1.0, "we": -1.0})
    assert f[0]["first"] == 1.0 and f[-1]["last"] == 1.0 and f[2]["position"] == 0.5
    assert f[4]["has_number"] == 1.0 and f[4]["cue_max"] == 1.0 and f[1]["cue"] == -1.0
    probs = g.role_probabilities("problem", "s", sentences)
    assert len(probs) == 5 and all(0.0 <= p <= 1.0 for p in probs)
    # the opening sentence states the problem, the figures' sentence the result
    assert g.choose_role("problem", "s", sentences).index == 0
    result = g.role_probabilities("result", "s", sentences)
    assert max(range(5), key=result.__getitem__) == 4
    assert g.choose_role("problem", "s", []).index is None


def test_column_names() -> None:
    assert g.column_key("Headline result") == "result" and g.column_key("data/benchmarks") == "data"
    assert g.column_key("How many beaches?") is None


def test_check_cell_quotes_verbatim_and_leads_with_the_figure() -> None:
    sentences = g.paper_sentences(SANDMARK)
    cell = g.check_cell("How many beaches are surveyed?", sentences[4], "Sandmark", "", "s", sentences)
    assert cell.supported and cell.lead and "14 beaches" in cell.lead
    forged = g.check_cell("What is the result?", "Sandmark cures all storms forever.", "Sandmark", "", "s",
                          sentences)
    assert not forged.supported


def test_tables_escape_paper_text() -> None:
    cells = [GridCell("problem", "p1", "Uses a | pipe and <img src=x> and ![a](b) *stars*", False, sentence=0),
             GridCell("method", "p1", g.NOT_STATED, True)]
    table = Grid(["problem", "method"], ["q1", "q2"], [GridRow("p1", "Lab|el", cells=cells)])
    md = g.grid_markdown(table)
    row = md.splitlines()[2]
    assert row.count(" | ") == 2  # the pipes inside the cells are escaped: still three cells
    assert "\\<img" in row and "\\!\\[a\\]" in row and "\\*stars\\*" in row and "Lab\\|el" in row
    parsed = list(csv.reader(io.StringIO(g.grid_csv(table))))
    assert parsed[0] == ["paper_id", "label", "problem", "method"]
    assert parsed[1][2].startswith("Uses a | pipe") and parsed[1][3] == g.NOT_STATED
    d = record(table)
    assert json.loads(json.dumps(d))["rows"][0]["cells"][1]["not_stated"] is True


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    return synthetic_assistant(tmp_path_factory.mktemp("grid-synthetic"))


def test_grid_on_the_synthetic_corpus(synthetic) -> None:  # noqa: ANN001
    table = synthetic.grid()
    assert table.columns == list(g.COLUMNS) and len(table.rows) == len(SYNTHETIC)
    for row in table.rows:
        entry = synthetic.paper(row.paper_id)
        sentences = g.paper_sentences(entry.text)
        assert [c.column for c in row.cells] == list(g.COLUMNS)
        for c in row.cells:
            if c.not_stated:
                assert c.text == g.NOT_STATED and c.sentence is None
            else:
                assert c.supported and sentences[c.sentence] == c.text  # a verbatim, checked quote
    sand = next(r for r in table.rows if r.label.startswith("Sandmark") or "Dune" in r.title)
    assert sand.cells[0].text.startswith("Coastal dunes erode")


def test_typed_column_scope_and_lookup(synthetic) -> None:  # noqa: ANN001
    ids = [e.paper_id for e in synthetic.papers()]
    table = synthetic.grid(["How many beaches are surveyed?", "problem"], ids[-1:])
    assert [r.paper_id for r in table.rows] == ids[-1:] and table.columns[1] == "problem"
    cell = table.rows[0].cells[0]
    assert not cell.not_stated and "14 beaches" in (cell.lead or "") and cell.text in SANDMARK
    by_lookup = synthetic.grid(["method"], lookup="dune erosion after storms")
    assert by_lookup.rows and by_lookup.rows[0].paper_id == ids[-1] and by_lookup.lookup
    with pytest.raises(QuestionError):
        synthetic.grid(["method"], ["no-such-paper"])
    with pytest.raises(QuestionError):
        synthetic.grid(["  "])


def test_seed_grid_labels_meet_their_floors(assistant) -> None:  # noqa: ANN001
    """The default grid over the 38 seed papers against the hand labels (the model never saw them); the floors
    sit just under what eval/grid_eval.py measured."""
    from eval.grid_eval import evaluate

    result = evaluate(assistant=assistant)
    assert result["cells"] == 190 and result["stated_cells"] == 131
    assert result["cell_right"] >= CELL_FLOOR and result["not_stated_right"] >= NOT_STATED_FLOOR


CELL_FLOOR = 0.60
NOT_STATED_FLOOR = 0.86


def test_pdf_grid_labels_match_the_reader() -> None:
    """The grid's second training set, the labelled abstracts of ../shared/real-pdfs, is read as the labels
    expect (a reader change that alters a labelled sentence fails here, not silently in the fit)."""
    from pathlib import Path

    from eval.fit_grid import load_pdf_labels

    folder = Path(__file__).resolve().parents[2].parent / "shared" / "real-pdfs"
    if not folder.is_dir():
        folder = Path("/work/shared/real-pdfs")
    if not folder.is_dir():
        pytest.skip("../shared/real-pdfs is not on this machine")
    abstracts = load_pdf_labels(folder)
    assert len(abstracts) == 8 and all(a.source == "pdfs" for a in abstracts)
    # every abstract states its method; the labels name sentences of the abstract as read
    assert all(any("method" in r for r in a.roles) for a in abstracts)
    assert all(len(a.roles) == len(a.sentences) for a in abstracts)
