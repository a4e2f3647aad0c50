"""Telling a bad generation from a good one, and building the anchor a prompt carries.

A generation is invalid when it ran out of tokens, when it loops, or when it is empty on a page that has
text. The pipeline retries invalid generations and finally falls back; nothing here retries.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

# A loop must cover this many characters and repeat its unit this many times before it counts: dot leaders,
# rules and runs of empty table cells are shorter than that in real pages.
MIN_LOOP_CHARS = 200
MIN_LOOP_REPEATS = 5
MAX_LOOP_PERIOD = 300
# The same line (with some letters or digits in it) this many times in a row.
MAX_SAME_LINES = 12

_ALNUM = re.compile(r"\w", re.UNICODE)
_SPACES = re.compile(r"[ \t\f\v\u00a0]+")


@dataclass(frozen=True, slots=True)
class Repetition:
    period: int  # characters in the repeated unit
    repeats: float
    unit: str


def tail_loop(text: str, *, min_chars: int = MIN_LOOP_CHARS, min_repeats: int = MIN_LOOP_REPEATS,
              max_period: int = MAX_LOOP_PERIOD) -> Repetition | None:
    """The shortest unit the end of `text` repeats, when the repetition is long enough to be a loop."""
    text = text.rstrip()
    n = len(text)
    for period in range(1, min(max_period, n // min_repeats) + 1):
        run = 0  # characters from the end that equal the character one period earlier
        while run < n - period and text[n - 1 - run] == text[n - 1 - run - period]:
            run += 1
        span = run + period
        if span >= min_chars and span / period >= min_repeats:
            return Repetition(period=period, repeats=round(span / period, 1), unit=text[n - period:])
    return None


def same_line_run(text: str, *, limit: int = MAX_SAME_LINES) -> Repetition | None:
    """A line with words in it repeated `limit` times in a row (anywhere in the text)."""
    previous, count = None, 0
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        count = count + 1 if line == previous else 1
        previous = line
        if count >= limit and len(_ALNUM.findall(line)) >= 3:
            return Repetition(period=len(line) + 1, repeats=float(count), unit=line)
    return None


def find_repetition(text: str) -> Repetition | None:
    return tail_loop(text) or same_line_run(text)


def text_quality(text: str) -> float:
    """Share of the non-space characters that are letters, digits, punctuation or symbols (0..1)."""
    chars = [c for c in text if not c.isspace()]
    if not chars:
        return 0.0
    return sum(1 for c in chars if unicodedata.category(c)[0] in "LNPS" and c != "\ufffd") / len(chars)


def usable_text_layer(text: str) -> bool:
    """A text layer worth anchoring a prompt on: some words, and not the mojibake of a font without a map."""
    words = text.split()
    return len(words) >= 3 and sum(len(w) for w in words) >= 12 and text_quality(text) >= 0.9


def has_words(text: str | None, minimum: int = 3) -> bool:
    return bool(text) and sum(1 for word in (text or "").split() if _ALNUM.search(word)) >= minimum


def invalid_reason(markdown: str, finish_reason: str, *, page_has_text: bool) -> str | None:
    """Why a generation cannot become the page's result, or None when it can."""
    if finish_reason == "length":
        return "length"
    if find_repetition(markdown):
        return "repetition"
    if page_has_text and not markdown.strip():
        return "empty"
    return None


def clip_anchor(text: str | None, max_chars: int) -> str | None:
    """The anchor as the prompt carries it: whitespace tidied, cut at a line or word end within the budget.

    The head of the page is kept: generation runs in reading order, so that is where drafts are wanted first.
    """
    if not text or max_chars <= 0:
        return None
    lines = [_SPACES.sub(" ", line).strip() for line in text.replace("\r", "\n").split("\n")]
    tidy = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    if len(tidy) <= max_chars:
        return tidy or None
    cut = tidy[:max_chars]
    boundary = max(cut.rfind("\n"), cut.rfind(" "))
    if boundary >= max_chars // 2:
        cut = cut[:boundary]
    return cut.rstrip() or None
