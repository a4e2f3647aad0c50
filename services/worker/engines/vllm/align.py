"""Boxes for what a model wrote: each block of its answer aligned to the page's words (text layer or OCR).

A block takes the tightest run of the page's words (in their reading order) that holds most of its tokens,
preferring the run closest after the previous block's (a model writes in reading order too). Its box is the
union of the words it matched and `alignment` says how well they matched: 2·matched / (block tokens + run
length), 1 for a block that is exactly a run of the page. A block that matches too little keeps `bbox: None`
— a box is never guessed. Words one block took are not offered to the next.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass

from services.core.elements import Element, ElementType
from services.worker.engines.base import PageWord
from services.worker.engines.geometry import bbox_union

# Words, except in scripts written without spaces (Chinese, Japanese), where each character is a token: a model
# and a text layer rarely cut such a line into the same runs.
_UNSPACED = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(f"[{_UNSPACED}]|[^\\W{_UNSPACED}]+")
_LATEX_COMMAND = re.compile(r"\\[A-Za-z]+")
# Below this the words a block matched are too few or too scattered to say where it is.
MIN_ALIGNMENT = 0.3


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(unicodedata.normalize("NFKC", text).casefold())


def element_tokens(element: Element) -> list[str]:
    if element.type == ElementType.FORMULA:
        return tokens(_LATEX_COMMAND.sub(" ", element.latex or element.text))
    return tokens(element.text)


@dataclass(slots=True)
class _Page:
    tokens: list[str]
    owner: list[int]  # the word each token is part of
    claimed: list[bool]


def align(elements: list[Element], words: list[PageWord], *, min_alignment: float = MIN_ALIGNMENT) -> list[Element]:
    """The elements with `bbox` and `alignment` filled in from the page's words (in reading order, in points)."""
    page = _Page([], [], [])
    for index, word in enumerate(words):
        for token in tokens(word.text):
            page.tokens.append(token)
            page.owner.append(index)
    page.claimed = [False] * len(page.tokens)
    cursor = 0
    aligned: list[Element] = []
    for element in elements:
        need = Counter(element_tokens(element))
        if not need:
            aligned.append(element.model_copy(update={"bbox": None, "alignment": None}))
            continue
        window = _best_window(need, page, cursor)
        if window is None:
            aligned.append(element.model_copy(update={"bbox": None, "alignment": 0.0}))
            continue
        start, stop = window
        matched = _take(need, page, start, stop)
        span = sum(1 for p in range(start, stop + 1) if not page.claimed[p])
        score = round(2 * len(matched) / (sum(need.values()) + span), 4)
        box = bbox_union([words[page.owner[p]].bbox for p in matched]) if score >= min_alignment else None
        for p in matched:
            page.claimed[p] = True
        cursor = stop + 1 if box is not None else cursor
        aligned.append(element.model_copy(update={"bbox": box, "alignment": score}))
    return aligned


def _best_window(need: Counter[str], page: _Page, cursor: int) -> tuple[int, int] | None:
    """[start, stop] token positions of the run holding the most of `need`, tightest and nearest the cursor."""
    candidates = [p for p, token in enumerate(page.tokens) if token in need and not page.claimed[p]]
    if not candidates:
        return None
    total = sum(need.values())
    max_span = 2 * total + 20
    counts: Counter[str] = Counter()
    matched = 0
    left = 0
    best: tuple[int, int, int] | None = None  # (matched, -span, -distance)
    best_window: tuple[int, int] | None = None
    for position in candidates:
        token = page.tokens[position]
        counts[token] += 1
        if counts[token] <= need[token]:
            matched += 1
        while position - candidates[left] + 1 > max_span or counts[page.tokens[candidates[left]]] > need[
                page.tokens[candidates[left]]]:
            dropped = page.tokens[candidates[left]]
            counts[dropped] -= 1
            if counts[dropped] < need[dropped]:
                matched -= 1
            left += 1
        start = candidates[left]
        distance = start - cursor if start >= cursor else 4 * (cursor - start)  # looking back costs more
        key = (matched, -(position - start + 1), -distance)
        if best is None or key > best:
            best, best_window = key, (start, position)
    return best_window


def _take(need: Counter[str], page: _Page, start: int, stop: int) -> list[int]:
    """The unclaimed positions in [start, stop] that the block's tokens match, first come first served."""
    left = Counter(need)
    taken: list[int] = []
    for position in range(start, stop + 1):
        token = page.tokens[position]
        if not page.claimed[position] and left[token] > 0:
            left[token] -= 1
            taken.append(position)
    return taken
