"""Right-to-left lines: from the visual order glyphs sit in on the page to the logical order they are read in."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, replace
from typing import Protocol, TypeVar

from services.worker.engines.cpu.model import Word

_RTL = frozenset({"R", "AL"})
_LTR = frozenset({"L", "EN", "AN"})
_MIRROR = str.maketrans("()[]{}<>«»", ")(][}{><»«")

class _Texted(Protocol):
    @property
    def text(self) -> str: ...


T = TypeVar("T", bound=_Texted)
W = TypeVar("W", bound=Word)


def is_rtl_text(text: str) -> bool:
    """True when most strong letters of the text are Arabic, Hebrew, Persian... (bidi classes R / AL)."""
    rtl = ltr = 0
    for char in text:
        kind = unicodedata.bidirectional(char)
        if kind in _RTL:
            rtl += 1
        elif kind == "L":
            ltr += 1
    return rtl > ltr


def _is_ltr_word(text: str) -> bool:
    kinds = {unicodedata.bidirectional(c) for c in text}
    return not (kinds & _RTL) and bool(kinds & _LTR)


def logical_word_text(text: str) -> str:
    """One RTL word from visual to logical order: characters reversed, digit and Latin runs kept as they read."""
    if _is_ltr_word(text):
        return text
    chars = list(reversed(text))
    out: list[str] = []
    index = 0
    while index < len(chars):
        if unicodedata.bidirectional(chars[index]) in _LTR:
            end = index
            while end < len(chars) and (unicodedata.bidirectional(chars[end]) in _LTR or chars[end] in ".,:/-"):
                end += 1
            while end > index and unicodedata.bidirectional(chars[end - 1]) not in _LTR:
                end -= 1
            out.extend(reversed(chars[index:end]))
            index = end
        else:
            out.append(chars[index].translate(_MIRROR))
            index += 1
    return "".join(out)


def reading_order(words: list[T]) -> list[T]:
    """Words of an RTL run given left to right on the page, in reading order (right to left), with runs of
    left-to-right words (numbers, Latin names) kept in their own order. The words' texts are left alone."""
    reversed_words = list(reversed(words))
    out: list[T] = []
    index = 0
    while index < len(reversed_words):
        if _is_ltr_word(reversed_words[index].text):
            end = index
            while end < len(reversed_words) and _is_ltr_word(reversed_words[end].text):
                end += 1
            out.extend(reversed(reversed_words[index:end]))
            index = end
        else:
            out.append(reversed_words[index])
            index += 1
    return out


def visual_to_logical(words: list[W]) -> list[W]:
    """Words of an RTL line given left to right on the page, returned in reading order (right to left), with
    runs of left-to-right words (numbers, Latin names) kept in their own order and each RTL word's characters
    put in logical order."""
    return [word if _is_ltr_word(word.text) else replace(word, text=logical_word_text(word.text))
            for word in reading_order(words)]


def cell_text(placed: list[tuple[float, float, str]]) -> str:
    """A table cell's text from its words (line centre y, left x, text already in logical order within the
    word): lines top to bottom; within a line left to right, or right to left when the cell reads RTL."""
    rtl = is_rtl_text("".join(text for _, _, text in placed))
    lines: dict[int, list[tuple[float, str]]] = {}
    for y, x, text in placed:
        lines.setdefault(round(y), []).append((x, text))
    out = ""
    for y in sorted(lines):
        visual = [_Token(text, x) for x, text in sorted(lines[y], key=lambda item: item[0])]
        ordered = reading_order(visual) if rtl else visual
        line = " ".join(token.text for token in ordered)
        out = join_lines(out, line) if out else line
    return out


def join_lines(upper: str, lower: str) -> str:
    """Two lines of a cell's text as one: a word broken at a hyphen is joined again; before a capital the hyphen
    is a compound's ("Non-" over "Hispanic") and stays."""
    if upper.endswith(("-", "‐")) and lower[:1].isalpha() and not upper[-2:-1].isspace():
        return (upper[:-1] if lower[:1].islower() else upper) + lower
    return f"{upper} {lower}"


@dataclass(frozen=True, slots=True)
class _Token:
    text: str
    x: float
