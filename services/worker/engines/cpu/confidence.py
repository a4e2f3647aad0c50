"""Per-page confidence in [0, 1] and the signals behind it, so `balanced` mode and customers can act on it."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

from services.worker.engines.cpu import tuning
from services.worker.engines.cpu.model import PageText

_WORD = re.compile(r"\w+", re.UNICODE)


def text_quality(text: str) -> float:
    """Share of the non-space characters that are letters, digits, punctuation or symbols (not U+FFFD,
    private-use or control characters)."""
    chars = [c for c in text if not c.isspace()]
    if not chars:
        return 0.0
    good = sum(1 for c in chars if unicodedata.category(c)[0] in "LNPS" and c != "\ufffd")
    return good / len(chars)


def word_shape_quality(text: str) -> float:
    """Share of words that look like words: not a jumble of case changes, digits and letters inside one token.

    Glyphs mapped to the wrong code points (a broken ToUnicode map) read as such jumbles.
    """
    words = _WORD.findall(text)
    if not words:
        return 0.0
    plausible = 0
    for word in words:
        letters = sum(c.isalpha() for c in word)
        digits = sum(c.isdigit() for c in word)
        changes = sum(1 for a, b in zip(word, word[1:], strict=False) if a.islower() and b.isupper())
        if ((letters == 0 or digits == 0 or len(word) <= tuning.WORD_SHAPE_SHORT)
                and changes <= tuning.WORD_SHAPE_MAX_CASE_CHANGES):
            plausible += 1
    return plausible / len(words)


def agreement(first: str, second: str) -> float:
    """Word-bag F1 between two readings of the same page (text layer against OCR)."""
    a = Counter(w.lower() for w in _WORD.findall(first))
    b = Counter(w.lower() for w in _WORD.findall(second))
    if not a and not b:
        return 1.0
    common = sum((a & b).values())
    if not common:
        return 0.0
    precision = common / sum(b.values())
    recall = common / sum(a.values())
    return 2 * precision * recall / (precision + recall)


def text_layer_signals(page: PageText, text: str) -> dict[str, float]:
    chars = max(1, page.chars)
    return {
        "text_layer_chars": float(page.chars),
        "text_layer_quality": round(text_quality(text), 4),
        "text_layer_word_shape": round(word_shape_quality(text), 4),
        "text_layer_unmapped": round(page.unmapped_chars / chars, 4),
        "text_layer_invisible": round(page.invisible_chars / chars, 4),
        "image_coverage": round(page.image_coverage, 4),
    }


def text_layer_confidence(signals: dict[str, float]) -> float:
    value = signals["text_layer_quality"] * (1 - signals["text_layer_unmapped"])
    value *= 0.5 + 0.5 * signals["text_layer_word_shape"]
    if (signals.get("image_coverage", 0.0) > tuning.PICTURE_PAGE_COVERAGE
            and signals["text_layer_chars"] < tuning.PICTURE_PAGE_MAX_CHARS):
        value *= tuning.PICTURE_PAGE_PENALTY  # most of the page is a picture the text layer may not describe
    return round(max(0.0, min(1.0, value)), 4)


def ocr_signals(scores: list[float], texts: list[str], boxes_found: int) -> dict[str, float]:
    weights = [max(1, len(t)) for t in texts]
    mean = sum(s * w for s, w in zip(scores, weights, strict=False)) / sum(weights) if weights else 0.0
    return {
        "ocr_mean_score": round(mean, 4),
        "ocr_min_score": round(min(scores), 4) if scores else 0.0,
        "ocr_lines": float(len(texts)),
        "ocr_boxes": float(boxes_found),
        "ocr_kept": round(len(texts) / boxes_found, 4) if boxes_found else 1.0,
    }


def ocr_confidence(signals: dict[str, float]) -> float:
    if signals["ocr_boxes"] == 0:
        return tuning.OCR_BLANK_CONFIDENCE  # nothing on the page looked like text: a blank page, confidently empty
    value = signals["ocr_mean_score"] * (tuning.OCR_CONFIDENCE_BASE + tuning.OCR_KEPT_WEIGHT * signals["ocr_kept"])
    return round(max(0.0, min(1.0, value)), 4)
