"""Text similarity: 1 - normalized Levenshtein distance between normalized texts (0 = nothing alike, 1 = equal).

Normalization is the same for the parser's Markdown and for the reference, whatever produced either:
markup is reduced to its text, Unicode to NFKC, quotes and dashes to ASCII, words broken by a hyphen at a line
end are re-joined, and every run of whitespace becomes one space. Case and punctuation are kept: they are
part of what a parser must get right.
"""

from __future__ import annotations

import html
import re
import unicodedata

from rapidfuzz import fuzz
from rapidfuzz.distance import Levenshtein

_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_FRONT_MATTER = re.compile(r"\A---\n.*?\n---\n", re.DOTALL)
_BREAK_TAG = re.compile(r"<br\s*/?>|</(?:p|div|tr|h[1-6]|li|table|thead|tbody)>", re.IGNORECASE)
_CELL_END = re.compile(r"</t[dh]>", re.IGNORECASE)
_TAG = re.compile(r"</?[a-zA-Z][^>]*>")
_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+", re.MULTILINE)
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+", re.MULTILINE)
_QUOTE_MARK = re.compile(r"^\s*>\s?", re.MULTILINE)
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*$", re.MULTILINE)
_EMPHASIS = re.compile(r"(\*\*|__|\*|_|~~|`)(?=\S)(.+?)(?<=\S)\1", re.DOTALL)
_HYPHEN_BREAK = re.compile(r"(\w)-[ \t]*\n[ \t]*(\w)")
_SPACE = re.compile(r"\s+")
FANCY = str.maketrans({
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"', "\u00ab": '"', "\u00bb": '"',
    "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2015": "-", "\u2212": "-",
    "\u00a0": " ", "\u00ad": "",
})


def markdown_to_text(markdown: str) -> str:
    """The reading text of Markdown (with HTML tables and tags): markup gone, line structure kept."""
    text = _COMMENT.sub("", markdown)
    text = _FRONT_MATTER.sub("", text)
    text = _BREAK_TAG.sub("\n", text)
    text = _CELL_END.sub(" ", text)
    text = _TAG.sub("", text)
    text = _IMAGE.sub(r"\1", text)
    text = _LINK.sub(r"\1", text)
    text = _TABLE_RULE.sub("", text)
    text = _HEADING.sub("", text)
    text = _BULLET.sub("", text)
    text = _QUOTE_MARK.sub("", text)
    text = text.replace("|", " ")
    for _ in range(2):  # nested emphasis: ***x*** is ** around *x*
        text = _EMPHASIS.sub(r"\2", text)
    return html.unescape(text)


def normalize(text: str) -> str:
    text = unicodedata.normalize("NFKC", markdown_to_text(text)).translate(FANCY)
    text = _HYPHEN_BREAK.sub(r"\1\2", text)
    return _SPACE.sub(" ", text).strip()


def similarity(prediction: str, reference: str) -> float:
    """1 - Levenshtein(prediction, reference) / max(len) on the normalized texts; two empty texts are equal."""
    predicted, wanted = normalize(prediction), normalize(reference)
    if not predicted and not wanted:
        return 1.0
    return float(Levenshtein.normalized_similarity(predicted, wanted))


def split_zones(reference: str) -> list[str]:
    """The zones of a UNLV-style reference: blocks separated by two or more blank lines."""
    return [z for z in re.split(r"\n[ \t]*\n[ \t]*\n+", reference) if z.strip()]


def _best_stretch(wanted: str, predicted: str, slack: int = 4) -> tuple[int, int]:
    """(edit distance, max length) of the zone against the prediction's stretch that matches it best.

    partial_ratio_alignment finds the stretch by Indel similarity; its ends are then moved by up to `slack`
    characters each way to the Levenshtein-best boundaries.
    """
    alignment = fuzz.partial_ratio_alignment(wanted, predicted)
    if alignment is None:
        return len(wanted), len(wanted)
    best = (len(wanted) + len(predicted), 0)
    for start in range(max(0, alignment.dest_start - slack), min(len(predicted), alignment.dest_start + slack) + 1):
        for end in range(max(start, alignment.dest_end - slack), min(len(predicted), alignment.dest_end + slack) + 1):
            stretch = predicted[start:end]
            distance = Levenshtein.distance(wanted, stretch)
            if distance < best[0]:
                best = (distance, max(len(wanted), len(stretch)))
    return best


def aligned_similarity(part: str, whole: str) -> float:
    """1 - Levenshtein / max length of normalized `part` against the stretch of normalized `whole` it matches best
    (`_best_stretch`): how well one block of a page was read, against a reference of the whole page."""
    if not part:
        return 1.0
    distance, length = _best_stretch(part, whole)
    return 1.0 - distance / length if length else 0.0


def zoned_similarity(prediction: str, zones: list[str]) -> float:
    """Similarity when the reference covers only some zones of the page: text outside them is not penalized.

    Each zone is aligned to the stretch of the prediction that matches it best (`_best_stretch`), and the edit
    distance is counted against that stretch only. The result is
    1 - (sum of the zones' distances) / (sum of max(zone length, stretch length)).
    """
    predicted = normalize(prediction)
    total_distance = 0
    total_length = 0
    for zone in zones:
        wanted = normalize(zone)
        if not wanted:
            continue
        if not predicted:
            total_distance += len(wanted)
            total_length += len(wanted)
            continue
        distance, length = _best_stretch(wanted, predicted)
        total_distance += distance
        total_length += length
    if total_length == 0:
        return 1.0
    return 1.0 - total_distance / total_length
