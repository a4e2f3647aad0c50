"""TEDS / TEDS-Struct (PubTabNet), on tables small enough to count the tree edits by hand."""

from __future__ import annotations

import random

import pytest
from apted import APTED, Config

from pagemill_eval.ted import postorder, tree_edit_distance
from pagemill_eval.teds import TableNode, _build, match_tables, parse_table, rename_cost, rename_matrix, teds

GRID = "<table><tr><td>a</td><td>b</td></tr><tr><td>c</td><td>{}</td></tr></table>"


def test_identical_tables_score_one() -> None:
    assert teds(GRID.format("d"), GRID.format("d")) == 1.0


def test_one_changed_cell() -> None:
    # 6 nodes under <table> (2 tr + 4 td); renaming one cell "d" -> "x" costs 1 (all of its one character)
    assert teds(GRID.format("x"), GRID.format("d")) == pytest.approx(1 - 1 / 6)
    # "abcd" -> "abce": the rename costs the normalized distance of the contents, 1/4
    assert teds(GRID.format("abce"), GRID.format("abcd")) == pytest.approx(1 - 0.25 / 6)
    # structure only: contents do not count
    assert teds(GRID.format("x"), GRID.format("d"), structure_only=True) == 1.0


def test_a_span_differs_in_structure() -> None:
    spanned = "<table><tr><td colspan=2>a</td></tr></table>"
    split = "<table><tr><td>a</td><td></td></tr></table>"
    # rename td(colspan 2) -> td (cost 1) + insert one td (cost 1), over max(2, 3) nodes
    assert teds(spanned, split) == pytest.approx(1 - 2 / 3)
    assert teds(spanned, split, structure_only=True) == pytest.approx(1 - 2 / 3)


def test_headers_and_sections_are_read_like_plain_cells() -> None:
    with_head = ("<table><thead><tr><th>a</th><th><b>b</b></th></tr></thead>"
                 "<tbody><tr><td>c</td><td>d</td></tr></tbody></table>")
    assert teds(with_head, GRID.format("d")) == 1.0


def test_no_table_scores_zero() -> None:
    assert teds("just text", GRID.format("d")) == 0.0


def test_tables_are_paired_by_best_score_and_missing_ones_count_zero() -> None:
    first, second = GRID.format("d"), "<table><tr><td>x</td></tr></table>"
    extra = "<table><tr><td>unrelated</td><td>1</td><td>2</td></tr></table>"
    both = match_tables([second, extra, first], [first, second])
    assert both.teds == 1.0 and both.teds_struct == 1.0
    assert both.pairs == [(0, 2), (1, 0)]
    only_one = match_tables([first], [first, second])
    assert only_one.teds == 0.5
    assert match_tables([], [first]).teds == 0.0


class _Apted(Config):  # type: ignore[misc]
    def rename(self, node1: TableNode, node2: TableNode) -> float:
        return rename_cost(node1, node2)

    def children(self, node: TableNode) -> list[TableNode]:
        return node.children


def _random_table(rng: random.Random, max_rows: int, max_cols: int) -> str:
    rows = []
    for _ in range(rng.randint(1, max_rows)):
        cells = "".join(f"<td{' colspan=2' if rng.random() < 0.15 else ''}>"
                        f"{rng.choice(['a', 'ab', '', 'x1', 'abc'])}</td>" for _ in range(rng.randint(0, max_cols)))
        rows.append(f"<tr>{cells}</tr>")
    stray = "<td>z</td>" if rng.random() < 0.2 else ""  # a cell outside any row
    return f"<table>{''.join(rows)}{stray}</table>"


@pytest.mark.parametrize(("max_rows", "max_cols", "count"), [(4, 4, 150), (10, 24, 12)])
def test_distance_equals_apted(max_rows: int, max_cols: int, count: int) -> None:
    """The vectorized Zhang-Shasha gives PubTabNet's APTED distance (small and wide tables, both code paths)."""
    rng = random.Random(7)
    for _ in range(count):
        first, second = (_build(parse_table(_random_table(rng, max_rows, max_cols)), False) for _ in range(2))
        nodes1, left1 = postorder(first)
        nodes2, left2 = postorder(second)
        ours = tree_edit_distance(left1, left2, rename_matrix(nodes1, nodes2))
        assert ours == pytest.approx(APTED(first, second, _Apted()).compute_edit_distance())
