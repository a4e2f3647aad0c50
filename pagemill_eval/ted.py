"""Exact ordered tree edit distance (Zhang-Shasha), vectorized for the flat, wide trees that tables make.

Unit cost to insert or delete a node; renaming node i of the first tree into node j of the second costs
`rename[i, j]` (in [0, 1], both trees in post-order). PubTabNet computes TEDS with APTED; any exact algorithm
gives the same distance, and the unit tests check this one against APTED. APTED in pure Python needs minutes
for a 700-cell table; here three things make it take seconds:
- a single node against a subtree has a closed form: |T| - 1 + the cheapest rename into one of T's nodes;
- each row of Zhang-Shasha's forest table is a prefix-minimum scan, done with numpy along the longer side
  (the distance is symmetric: swapping the trees and transposing the costs gives the same table, transposed);
- the rename costs come in as one matrix, computed in bulk by the caller.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

import numpy as np


class TreeNode(Protocol):
    @property
    def children(self) -> Sequence[TreeNode]: ...


N = TypeVar("N", bound=TreeNode)
_NUMPY_WIDTH = 16  # smaller forest tables are faster in plain Python


def postorder(root: N) -> tuple[list[N], np.ndarray]:
    """Nodes in post-order and, for each, the post-order index of its leftmost leaf."""
    nodes: list[N] = []
    leftmost: list[int] = []
    first_leaf: dict[int, int] = {}
    stack: list[tuple[N, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        kids = node.children
        if not expanded and kids:
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(kids))  # type: ignore[misc]
            continue
        index = len(nodes)
        nodes.append(node)
        leftmost.append(first_leaf[id(kids[0])] if kids else index)
        first_leaf[id(node)] = leftmost[index]
    return nodes, np.asarray(leftmost, dtype=np.int64)


def _keyroots(leftmost: np.ndarray) -> list[int]:
    highest: dict[int, int] = {}
    for index, leaf in enumerate(leftmost.tolist()):
        highest[leaf] = index
    return sorted(highest.values())


def tree_edit_distance(left1: np.ndarray, left2: np.ndarray, rename: np.ndarray) -> float:
    """The distance between two trees given as leftmost-leaf arrays (post-order) and their rename costs."""
    n1, n2 = len(left1), len(left2)
    treedist = np.zeros((n1, n2))
    sizes1 = np.arange(n1) - left1 + 1
    sizes2 = np.arange(n2) - left2 + 1
    leaves1 = np.nonzero(left1 == np.arange(n1))[0]
    leaves2 = np.nonzero(left2 == np.arange(n2))[0]
    # A leaf against every subtree of the other tree, and every subtree against a leaf, in closed form:
    # subtrees are contiguous ranges [leftmost, index] of the post-order.
    from_leaves = rename[leaves1, :]
    for j in range(n2):
        treedist[leaves1, j] = sizes2[j] - 1 + from_leaves[:, left2[j]:j + 1].min(axis=1)
    to_leaves = rename[:, leaves2]
    for i in range(n1):
        treedist[i, leaves2] = sizes1[i] - 1 + to_leaves[left1[i]:i + 1, :].min(axis=0)
    inner1 = [k for k in _keyroots(left1) if left1[k] != k]
    inner2 = [k for k in _keyroots(left2) if left2[k] != k]
    lists = (left1.tolist(), left2.tolist())
    for i in inner1:
        for j in inner2:
            width1, width2 = i - left1[i] + 1, j - left2[j] + 1
            if max(width1, width2) < _NUMPY_WIDTH:
                _forest_python(i, j, lists[0], lists[1], treedist, rename)
            elif width2 >= width1:
                _forest_numpy(i, j, left1, left2, treedist, rename)
            else:  # the same table transposed, so numpy runs along the longer side
                _forest_numpy(j, i, left2, left1, treedist.T, rename.T)
    return float(treedist[n1 - 1, n2 - 1])


def _forest_python(i: int, j: int, left1: list[int], left2: list[int], treedist: np.ndarray,
                   rename: np.ndarray) -> None:
    """Zhang-Shasha's forest table for the keyroots (i, j); fills treedist along both leftmost paths."""
    li, lj = left1[i], left2[j]
    rows, cols = i - li + 2, j - lj + 2
    forest = [[0.0] * cols for _ in range(rows)]
    forest[0] = [float(b) for b in range(cols)]
    for a in range(1, rows):
        forest[a][0] = float(a)
    for a in range(1, rows):
        i1 = li + a - 1
        on_path1 = left1[i1] == li
        row, above, jump = forest[a], forest[a - 1], forest[left1[i1] - li]
        dist_row = treedist[i1, lj:j + 1].tolist()
        rename_row = rename[i1, lj:j + 1].tolist() if on_path1 else dist_row
        for b in range(1, cols):
            j1 = lj + b - 1
            best = min(above[b], row[b - 1]) + 1.0
            if on_path1 and left2[j1] == lj:
                best = min(best, above[b - 1] + rename_row[b - 1])
                treedist[i1, j1] = best
            else:
                best = min(best, jump[left2[j1] - lj] + dist_row[b - 1])
            row[b] = best


def _forest_numpy(i: int, j: int, left1: np.ndarray, left2: np.ndarray, treedist: np.ndarray,
                  rename: np.ndarray) -> None:
    """The same table, one row at a time: row[b] = min(c[b], row[b-1] + 1) is a prefix minimum of c[b] - b."""
    li, lj = int(left1[i]), int(left2[j])
    rows, cols = i - li + 2, j - lj + 2
    forest = np.zeros((rows, cols))
    forest[:, 0] = np.arange(rows)
    forest[0, :] = np.arange(cols)
    columns = np.arange(lj, j + 1)
    path2 = np.nonzero(left2[columns] == lj)[0]
    jump2 = left2[columns] - lj
    ramp = np.arange(cols, dtype=float)
    for a in range(1, rows):
        i1 = li + a - 1
        above = forest[a - 1]
        candidates = forest[int(left1[i1]) - li, jump2] + treedist[i1, columns]
        on_path1 = left1[i1] == li
        if on_path1:
            candidates[path2] = above[path2] + rename[i1, columns[path2]]
        candidates = np.minimum(candidates, above[1:] + 1.0)
        row = np.minimum.accumulate(np.concatenate(([float(a)], candidates)) - ramp) + ramp
        forest[a] = row
        if on_path1:
            treedist[i1, columns[path2]] = row[1:][path2]
