"""specsim's miss analysis and n-gram lookup variants, on token sequences made up for the purpose."""

from __future__ import annotations

import random
from collections.abc import Sequence

from pagemill_eval.specsim.corpus import reference_format
from pagemill_eval.specsim.lookup import LookupParams
from pagemill_eval.specsim.misses import page_misses, text_class
from pagemill_eval.specsim.simulate import simulate
from pagemill_eval.specsim.variants import NgramVariant, best_variant, measure_ngram
from tests.specsim_pages import Page


def spell(ids: Sequence[int]) -> str:
    """A word of letters per token id (digits would make every token read as digits)."""
    return "".join(" " + "".join(chr(ord("a") + int(digit)) for digit in str(i)) for i in ids)


def test_misses_decode_exactly_as_the_simulation_does() -> None:
    rng = random.Random(7)
    for _ in range(100):
        prompt = [rng.randint(0, 9) for _ in range(rng.randint(0, 60))]
        target = [rng.randint(0, 9) for _ in range(rng.randint(1, 60))]
        params = LookupParams(rng.randint(1, 6), rng.randint(1, 2), rng.randint(2, 6))
        misses, stats = page_misses(prompt, target, params, spell), simulate(prompt, target, params)
        assert misses.steps == stats.steps and misses.tokens == len(target)
        assert misses.lost_steps == stats.steps - len(target) / (params.num_speculative_tokens + 1)


def test_novel_misplaced_and_no_draft_are_told_apart() -> None:
    params = LookupParams(num_speculative_tokens=4, prompt_lookup_min=2, prompt_lookup_max=2)
    # Copied from the prompt, then text the prompt does not have: the draft fails on "novel" tokens.
    misses = page_misses([1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 90, 91, 92, 93, 94], params, spell)
    assert {cause for _, cause in misses.short} >= {"novel"}
    assert "misplaced" not in {cause for _, cause in misses.short}
    # "1 2" occurs twice in the prompt; the earliest place continues with 3 4 5 6, the target wants 7 8 9 10,
    # which the prompt has after the second place: a misplaced draft.
    prompt = [1, 2, 3, 4, 5, 6, 1, 2, 7, 8, 9, 10]
    misses = page_misses(prompt, [1, 2, 7, 8, 9, 10, 11], params, spell)
    assert misses.short[("word", "misplaced")] >= 1
    # No prompt and no repeats: nothing to look up.
    misses = page_misses([], [20, 21, 22, 23], params, spell)
    assert sum(misses.short.values()) == 2 and set(cause for _, cause in misses.short) == {"no draft"}


def test_text_classes_of_a_rejected_token() -> None:
    assert text_class("<td", ' class="') == "html markup"
    assert text_class("</td>", "<td>") == "html markup"
    assert text_class("| a ", "|") == "pipe table"
    assert text_class("end of line", "\n\n") == "line break"
    assert text_class("the value ", "\\frac") == "latex"
    assert text_class("", "##") == "markdown markup"
    assert text_class("population ", " 2003") == "digits"
    assert text_class("the ", " committee") == "word"
    assert text_class("word", "  ") == "space"
    assert text_class("word", ",") == "punctuation"


def test_reference_formats_from_ground_truth_names() -> None:
    assert reference_format("page.md") == "Markdown"
    assert reference_format("eu-002.derived.tables.html") == "HTML tables"
    assert reference_format("crazyones.txt") == "plain text"
    assert reference_format("paper.tex") == "LaTeX source"
    assert reference_format("rules.jsonl") == "other"


def test_longer_lookups_find_the_right_one_of_look_alike_places() -> None:
    # A table whose rows differ only in their first cell: a 2-token n-gram of the cells matches the first row;
    # a long one reaches back to the row's own first cell.
    rows = [[100 + row, 1, 5, 1, 6 + row, 1, 7 + 2 * row] for row in range(6)]
    prompt = [token for row in rows for token in row]
    pages = [Page("doc", prompt, prompt[:])]
    short, long = NgramVariant(2, 2), NgramVariant(2, 8)
    for variant in (short, long):
        measure_ngram(pages, variant, 4)
    assert pages[0].stats[4][long.name].committed_per_step > pages[0].stats[4][short.name].committed_per_step
    assert best_variant(pages, [short, long], [4]) == long
