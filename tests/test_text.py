"""Cleaning, sentence splitting and number extraction on the shapes abstracts really have."""

from rag.text import clean_markup, numbers, split_sentences, split_with_spaces, stable_id


def test_latex_and_markdown_are_cleaned() -> None:
    raw = (r"We propose \textbf{Co}upled \textbf{R}eceptive \textbf{F}ields (CoRF), up to 5.9$\times$ faster, "
           r"54.7\% win rate, $\textasciitilde$750 people, **CORE** and *reasoning-trace collapse*, 12--23\%.")
    assert clean_markup(raw) == ("We propose Coupled Receptive Fields (CoRF), up to 5.9× faster, 54.7% win rate, "
                                 "~750 people, CORE and reasoning-trace collapse, 12–23%.")


def test_sentences_keep_abbreviations_decimals_and_names() -> None:
    text = ("We compare to prior work, e.g. FooNet, vs. full attention. Qwen2.5-VL-7B et al. gain 5.6x. "
            "It remains stable over 1,800 test steps. The prompt is X. This yields a bound.")
    assert split_sentences(text) == [
        "We compare to prior work, e.g. FooNet, vs. full attention.",
        "Qwen2.5-VL-7B et al. gain 5.6x.",
        "It remains stable over 1,800 test steps.",
        "The prompt is X.",
        "This yields a bound.",
    ]


def test_split_with_spaces_reassembles_exactly() -> None:
    text = "One sentence here.  Two sentences there! Three? Four (see Fig. 2) ends."
    assert "".join(split_with_spaces(text)) == text


def test_numbers_are_normalised() -> None:
    assert numbers("stable over 1,800 steps, 5.6x fewer, 88–97%, +6.2 NDCG, 3.04×, 70.0%, three phases") == {
        "1800", "5.6", "88", "97", "6.2", "3.04", "70", "3"}
    assert numbers("Qwen3 and one of the baselines") == set()


def test_ids_depend_on_text_not_whitespace() -> None:
    assert stable_id("A  paper\nabout   things.") == stable_id("A paper about things.")
    assert stable_id("A paper about things.") != stable_id("A paper about other things.")
    assert len(stable_id("x" * 50)) == 12


def test_superscript_stars_are_not_markdown_emphasis() -> None:
    """`C^\\star(x) and C^\\star(y)` once lost both stars to the italic rule ("C^(x) and C^(y)")."""
    assert clean_markup(r"we bound C^\star(x) and C^\star(y) tightly") == "we bound C^*(x) and C^*(y) tightly"
    assert clean_markup(r"$x_i^*$ and $y_i^*$") == "x_i^* and y_i^*"
    assert clean_markup("an *emphasised* word") == "an emphasised word"
