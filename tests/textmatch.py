"""Comparing parsed Markdown with a ground-truth text: the share of its words found, in order-free bags."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

_WORD = re.compile(r"\w+", re.UNICODE)


def words(text: str) -> list[str]:
    text = unicodedata.normalize("NFKC", text).lower()
    return _WORD.findall(text)


def word_recall(truth: str, output: str) -> float:
    """Fraction of the ground truth's words (with multiplicity) that the output contains."""
    wanted = Counter(words(truth))
    if not wanted:
        return 1.0
    found = Counter(words(output))
    return sum(min(count, found[word]) for word, count in wanted.items()) / sum(wanted.values())
