"""The eval's list-structure check: item text and item count against the Markdown ground truth's lists."""

from __future__ import annotations

from pagemill_eval.lists import aggregate, markdown_lists, score_lists

TRUTH = """## Tools

- Accessibility : Writers no longer needed expensive publishing equipment.
- Education : Word processors became a cornerstone of education.
- Creative Writing : Writers gained powerful tools to organize their ideas.

A paragraph.

1. Undo/Redo : the ability to undo mistakes.
2. Templates : pre-designed formats for documents.
"""


def test_lists_are_read_with_loose_items_and_wrapped_lines() -> None:
    markdown = "Intro.\n\n- one\n  still one\n\n- two\n-\n\n## Next\n\n1. a\n2) b\ncontinued\n\nText after."
    assert markdown_lists(markdown) == [["one still one", "two", ""], ["a", "b continued"]]


def test_the_same_lists_score_full_marks() -> None:
    loose = TRUTH.replace("\n- ", "\n\n- ").replace("\n2.", "\n\n2.")
    score = score_lists(loose, markdown_lists(TRUTH))
    assert (score.items, score.items_matched, score.lists, score.lists_count_ok) == (5, 5, 2, 2)


def test_merged_items_an_empty_bullet_and_a_split_item_are_caught() -> None:
    merged = ("- Accessibility: Writers no longer needed expensive publishing equipment. Education: Word processors "
              "became a cornerstone of education.\n\n- Creative Writing: Writers gained powerful tools to organize "
              "their ideas.\n\n-\n\n1. Undo/Redo: the ability\n\nto undo mistakes.\n\n2. Templates: pre-designed "
              "formats for documents.\n")
    score = score_lists(merged, markdown_lists(TRUTH))
    assert score.items == 5 and score.items_matched == 2  # "Creative Writing" and "Templates" only
    assert score.lists_count_ok == 0  # three items but one empty; the numbered list is cut by its split item
    assert any(missed.startswith("Accessibility") for missed in score.missed)
    figures = aggregate([score, None])
    assert figures["list_cases"] == 1 and figures["list_item_rate"] == 0.4 and figures["list_count_rate"] == 0.0
