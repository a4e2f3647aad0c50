"""TEDS and TEDS-Struct: tree-edit-distance similarity of HTML tables, as PubTabNet defines it.

TEDS(a, b) = 1 - EditDistance(a, b) / max(|a|, |b|), with |t| the number of nodes under <table>. Inserting or
deleting a node costs 1; renaming costs 1 when tag, colspan or rowspan differ, and for two cells the
normalized Levenshtein distance of their contents (character tokens, as PubTabNet tokenizes them).
TEDS-Struct gives every cell an empty content, so only the structure counts.

Before the trees are built, both sides get the same clean-up (docs/evaluation.md says why): `th` is read as
`td`, `thead`/`tbody`/`tfoot` wrappers and inline formatting tags are removed (PubTabNet's `ignore_nodes`), and
cell text is normalized like text similarity (NFKC, quotes and dashes, whitespace).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from lxml import etree, html
from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

from pagemill_eval.ted import postorder, tree_edit_distance
from pagemill_eval.textsim import FANCY

IGNORED_TAGS = ("thead", "tbody", "tfoot", "b", "strong", "i", "em", "u", "sup", "sub", "span", "a", "font",
                "colgroup", "col", "caption")
_SPACE = re.compile(r"\s+")


@dataclass(slots=True)
class TableNode:
    tag: str
    colspan: int | None = None
    rowspan: int | None = None
    content: str = ""  # PubTabNet tokenizes a cell into characters: a string is that token list
    children: list[TableNode] = field(default_factory=list)


def rename_cost(node1: TableNode, node2: TableNode) -> float:
    """PubTabNet's rename cost: 1 when tag or spans differ, else for cells their content's normalized distance."""
    if node1.tag != node2.tag or node1.colspan != node2.colspan or node1.rowspan != node2.rowspan:
        return 1.0
    if node1.tag == "td" and (node1.content or node2.content):
        return float(Levenshtein.normalized_distance(node1.content, node2.content))
    return 0.0


def rename_matrix(nodes1: list[TableNode], nodes2: list[TableNode]) -> np.ndarray:
    """`rename_cost` for every pair at once (the cell contents through rapidfuzz's bulk `cdist`)."""
    keys1 = [(n.tag, n.colspan, n.rowspan) for n in nodes1]
    keys2 = [(n.tag, n.colspan, n.rowspan) for n in nodes2]
    kinds = {k: index for index, k in enumerate(dict.fromkeys(keys1 + keys2))}
    kind1 = np.array([kinds[k] for k in keys1])
    kind2 = np.array([kinds[k] for k in keys2])
    matrix = (kind1[:, None] != kind2[None, :]).astype(float)
    cells1 = [i for i, n in enumerate(nodes1) if n.tag == "td"]
    cells2 = [j for j, n in enumerate(nodes2) if n.tag == "td"]
    if cells1 and cells2:
        content = process.cdist([nodes1[i].content for i in cells1], [nodes2[j].content for j in cells2],
                                scorer=Levenshtein.normalized_distance, dtype=np.float64)
        block = np.ix_(cells1, cells2)
        matrix[block] = np.where(matrix[block] > 0, 1.0, content)
    return matrix  # type: ignore[no-any-return]


def _span(value: str | None) -> int:
    try:
        return max(1, int(value or "1"))
    except ValueError:
        return 1


def _cell_tokens(cell: Any) -> str:
    text = " ".join(cell.itertext())
    text = unicodedata.normalize("NFKC", text).translate(FANCY)
    return _SPACE.sub(" ", text).strip()


def _build(node: Any, structure_only: bool) -> TableNode:
    if node.tag == "td":
        return TableNode("td", _span(node.get("colspan")), _span(node.get("rowspan")),
                         "" if structure_only else _cell_tokens(node), [])
    return TableNode(node.tag, children=[_build(child, structure_only) for child in node
                                         if isinstance(child.tag, str)])


def parse_table(table_html: str) -> Any | None:
    """The <table> element of an HTML fragment after the shared clean-up, or None when there is none."""
    if not table_html.strip():
        return None
    parser = html.HTMLParser(remove_comments=True, encoding="utf-8")
    try:
        root = html.fromstring(table_html.encode("utf-8"), parser=parser)
    except (etree.ParserError, ValueError):
        return None
    tables = [root] if root.tag == "table" else root.xpath(".//table")
    if not tables:
        return None
    table = tables[0]
    for nested in table.xpath(".//table"):  # a table inside a cell is that cell's content, as text
        nested.drop_tag()
    for cell in table.xpath(".//th"):
        cell.tag = "td"
    etree.strip_tags(table, *IGNORED_TAGS)
    return table


def teds(predicted_html: str, true_html: str, *, structure_only: bool = False) -> float:
    """TEDS (or TEDS-Struct) of one predicted table against one ground-truth table, in [0, 1]."""
    predicted, true = parse_table(predicted_html), parse_table(true_html)
    if predicted is None or true is None:
        return 0.0
    n_nodes = max(len(predicted.xpath(".//*")), len(true.xpath(".//*")))
    if n_nodes == 0:
        return 1.0
    nodes1, left1 = postorder(_build(predicted, structure_only))
    nodes2, left2 = postorder(_build(true, structure_only))
    distance = tree_edit_distance(left1, left2, rename_matrix(nodes1, nodes2))
    return max(0.0, 1.0 - float(distance) / n_nodes)


@dataclass(frozen=True, slots=True)
class TableMatch:
    teds: float
    teds_struct: float
    pairs: list[tuple[int, int | None]]  # (ground-truth table, predicted table or None)


def match_tables(predicted: list[str], truth: list[str]) -> TableMatch:
    """Pairs each ground-truth table with at most one predicted table, maximizing the summed TEDS.

    The document score is the mean over ground-truth tables; a table the parser missed scores 0, an extra
    predicted table costs nothing (the ground truth may not list every table of the page). TEDS-Struct is
    taken over the same pairing.
    """
    if not truth:
        return TableMatch(0.0, 0.0, [])
    scores = [[teds(p, t) for p in predicted] for t in truth]
    pairs = _best_assignment(scores, len(predicted))
    matched = [(t, p) for t, p in pairs if p is not None]
    total = sum(scores[t][p] for t, p in matched)
    total_struct = sum(teds(predicted[p], truth[t], structure_only=True) for t, p in matched)
    return TableMatch(total / len(truth), total_struct / len(truth), pairs)


def _best_assignment(scores: list[list[float]], n_predicted: int) -> list[tuple[int, int | None]]:
    """Exact (every injective pairing) while that stays small, greedy by score beyond."""
    n_truth = len(scores)
    if (n_predicted + 1) ** n_truth <= 20_000:
        best_value: float = -1.0
        best_choice: list[int | None] = [None] * n_truth
        choice: list[int | None] = []

        def search(t: int, value: float, used: set[int]) -> None:
            nonlocal best_value, best_choice
            if t == n_truth:
                if value > best_value:
                    best_value, best_choice = value, list(choice)
                return
            choice.append(None)
            search(t + 1, value, used)
            choice.pop()
            for p in range(n_predicted):
                if p not in used:
                    choice.append(p)
                    search(t + 1, value + scores[t][p], used | {p})
                    choice.pop()

        search(0, 0.0, set())
        return list(enumerate(best_choice))
    order = sorted(((scores[t][p], t, p) for t in range(n_truth) for p in range(n_predicted)), reverse=True)
    chosen: dict[int, int] = {}
    used: set[int] = set()
    for _, t, p in order:
        if t not in chosen and p not in used:
            chosen[t] = p
            used.add(p)
    return [(t, chosen.get(t)) for t in range(n_truth)]
