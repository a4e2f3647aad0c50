"""Per-page confidence in [0, 1] and the signals behind it, so `balanced` mode and customers can act on it."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import TYPE_CHECKING

from services.core.elements import FURNITURE, Element, ElementType
from services.worker.engines.cpu import tuning
from services.worker.engines.cpu.model import PageText

if TYPE_CHECKING:
    from services.worker.engines.cpu.pagecolumns import PageTables

# A page whose confidence is under this is worth a reader's look (`needs_review`; the setting
# `quality.needs_review_below` is what the service uses). With the fitted OCR penalties, on the generated sets of
# seeds 28 and 30 it flags 14 of the 17 pages read under 0.5 and 2 of the 79 others; 0.6-0.7 have the best F1
# there (the same 14 caught, none wrong). docs/evaluation.md, "A fitted confidence".
NEEDS_REVIEW_BELOW = 0.8

_WORD = re.compile(r"\w+", re.UNICODE)
_FIGURE = re.compile(r"^[-+−(]?\d[\d.,]*%?\)?$")


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


def ocr_signals(scores: list[float], texts: list[str], boxes_found: int, skew: float = 0.0,
                rescale: tuple[float, int] = (1.0, 0)) -> dict[str, float]:
    """The recognizer's scores over the page, the tilt of its lines and, `rescale`, how well its reading of the
    longest lines survives their crops read again at another scale (`ocr.rescale_agreement`: agreement, lines)."""
    weights = [max(1, len(t)) for t in texts]
    mean = sum(s * w for s, w in zip(scores, weights, strict=False)) / sum(weights) if weights else 0.0
    low = sum(w for s, w in zip(scores, weights, strict=False) if s < tuning.OCR_LOW_SCORE)
    return {
        "ocr_mean_score": round(mean, 4),
        "ocr_low_score_share": round(low / sum(weights), 4) if weights else 0.0,
        "ocr_min_score": round(min(scores), 4) if scores else 0.0,
        "ocr_lines": float(len(texts)),
        "ocr_boxes": float(boxes_found),
        "ocr_kept": round(len(texts) / boxes_found, 4) if boxes_found else 1.0,
        "ocr_skew_deg": round(skew, 2),
        # lines read twice (`engine.ocr_rescale_lines` > 0): recorded only where a second reading was made
        **({"ocr_rescale_agreement": round(rescale[0], 4), "ocr_rescale_lines": float(rescale[1])}
           if rescale[1] else {}),
    }


def ocr_confidence(signals: dict[str, float]) -> float:
    if signals["ocr_boxes"] == 0:
        return tuning.OCR_BLANK_CONFIDENCE  # nothing on the page looked like text: a blank page, confidently empty
    value = signals["ocr_mean_score"] * (tuning.OCR_CONFIDENCE_BASE + tuning.OCR_KEPT_WEIGHT * signals["ocr_kept"])
    penalty = OCR_PENALTIES.penalty(signals)
    signals["ocr_penalty"] = round(penalty, 4)  # kept so that a refit can add it back to a saved confidence
    return round(max(0.0, min(1.0, value - penalty)), 4)


@dataclass(frozen=True, slots=True)
class OcrPenalties:
    """What tilted lines and doubtful lines take off an OCR page's confidence, in confidence units per degree
    and per unit of share.

    The recogniser's mean score stays high on a page it misreads with conviction: a tilted scan whose line
    grouping and reading order broke, a blurred, noisy or coarse scan read as plausible words. So the tilt
    (`ocr_skew_deg`, the width-weighted median angle of the read lines) and the share of characters on doubtful
    lines (`ocr_low_score_share`, lines scoring under `tuning.OCR_LOW_SCORE`) weigh apart from the mean score.
    The weights in use, `OCR_PENALTIES`, are a logistic regression's, fitted on generated pages (tuning.py says
    how; `pagemill_eval.penalty_fit` fits them). `per_rescale_disagreement` weighs 1 − `ocr_rescale_agreement`, a
    misreading the recognizer is sure of that a second reading at another scale does not repeat
    (`pagemill_eval.rescale_fit` fits it)."""

    per_skew_deg: float
    per_doubt_share: float
    per_rescale_disagreement: float = 0.0

    def penalty(self, signals: Mapping[str, float]) -> float:
        """What the page's signals take off (0 for a page OCR did not read)."""
        return (self.per_skew_deg * signals.get("ocr_skew_deg", 0.0)
                + self.per_doubt_share * signals.get("ocr_low_score_share", 0.0)
                + self.per_rescale_disagreement * (1.0 - signals.get("ocr_rescale_agreement", 1.0)))


OCR_PENALTIES = OcrPenalties(tuning.OCR_PENALTY_PER_SKEW_DEG, tuning.OCR_PENALTY_PER_DOUBT_SHARE,
                             tuning.OCR_PENALTY_PER_RESCALE_DISAGREEMENT)


class _Cells(HTMLParser):
    """The cells of one HTML table: (rowspan × colspan, text)."""

    def __init__(self) -> None:
        super().__init__()
        self.cells: list[tuple[int, str]] = []
        self._open: list[str] | None = None
        self._area = 1

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("td", "th"):
            spans = dict(attrs)
            self._area = _span(spans.get("rowspan")) * _span(spans.get("colspan"))
            self._open = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._open is not None:
            self.cells.append((self._area, "".join(self._open).strip()))
            self._open = None

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._open.append(data)


def _span(value: str | None) -> int:
    return int(value) if value and value.isdigit() else 1


def table_consistency(html: str) -> float:
    """1 for a table whose grid looks read right, lower when cells hold several figures each (columns left
    unsplit) or when most of the grid is empty (a chart or scattered labels taken for a table)."""
    parser = _Cells()
    parser.feed(html)
    cells = parser.cells
    if not cells:
        return 0.0
    filled = [text for _, text in cells if text]
    packed = sum(1 for text in filled if sum(1 for token in text.split() if _FIGURE.match(token)) >= 2)
    packed_share = packed / max(1, len(filled))
    area = sum(a for a, _ in cells)
    empty_share = sum(a for a, text in cells if not text) / max(1, area)
    empty_excess = max(0.0, empty_share - tuning.TABLE_EMPTY_OK) / (1 - tuning.TABLE_EMPTY_OK)
    return (1 - tuning.TABLE_PACKED_WEIGHT * packed_share) * (1 - tuning.TABLE_EMPTY_WEIGHT * empty_excess)


def table_prose_share(tables_html: list[str], page_words: int) -> float:
    """Share of the page's words that sit in table cells of `tuning.TABLE_PROSE_CELL_WORDS` words or more:
    sentences laid out as cells, what page columns or a list of definitions taken for one table look like."""
    if not tables_html or page_words <= 0:
        return 0.0
    wordy = 0
    for html in tables_html:
        parser = _Cells()
        parser.feed(html)
        wordy += sum(n for _, text in parser.cells if (n := len(text.split())) >= tuning.TABLE_PROSE_CELL_WORDS)
    return min(1.0, wordy / page_words)


def structure_signals(tree: list[Element], page_tables: PageTables | None = None) -> dict[str, float]:
    """How consistent the page's tables are, how much of the page's text sits in wordy table cells and (given the
    page's tables as its word boxes tell them, `pagecolumns.table_readings`) in tables a page gutter runs through
    or whose strips break apart, and whether figures sit loose in short lines where no table was found (a table read
    as paragraphs)."""
    table_elements = [e for e in tree if e.type == ElementType.TABLE]
    tables = [table_consistency(e.html or "") for e in table_elements]
    prose = [e for e in tree if e.type not in (ElementType.TABLE, ElementType.FIGURE) and e.text.strip()]
    loose = sum(1 for e in prose if len(e.text.split()) <= tuning.LOOSE_FIGURE_MAX_WORDS
                and any(_FIGURE.match(token) for token in e.text.split()))
    signals = {"loose_figure_lines": float(loose), "text_blocks": float(len(prose))}
    if tables:
        signals["table_consistency"] = round(min(tables), 4)
        words_in_text = sum(len(e.text.split()) for e in tree if e.type not in (ElementType.FIGURE, *FURNITURE))
        signals["table_prose_share"] = round(table_prose_share([e.html or "" for e in table_elements],
                                                               words_in_text), 4)
        if page_tables is not None:
            signals["table_gutter_share"] = round(page_tables.share(lambda r: r.guttered), 4)
            signals["table_flow_share"] = round(page_tables.share(lambda r: r.flowing), 4)
            signals["table_flow_breaks"] = float(page_tables.most_breaks)
            disorder = max((r.disorder for r in page_tables.readings), default=0.0)
            if disorder:  # recorded only where a table was asked (a text-layer table of page columns)
                signals["table_order_disorder"] = disorder
                signals["table_order_share"] = round(page_tables.share(lambda r: r.disordered), 4)
    return signals


def table_prose_penalty(signals: Mapping[str, float]) -> float:
    """What sentences laid out as table cells take off the page's confidence (after `structure_factor`): a page's
    columns read as one table keep every word, so recognition and coverage stay high while the order is lost."""
    return tuning.TABLE_PROSE_PENALTY * signals.get("table_prose_share", 0.0)


def structure_factor(signals: dict[str, float]) -> float:
    """What the page's structure takes off its confidence (1: nothing)."""
    factor = signals.get("table_consistency", 1.0)
    loose = signals.get("loose_figure_lines", 0.0)
    if ("table_consistency" not in signals and loose >= tuning.LOOSE_FIGURE_MIN_LINES
            and loose >= tuning.LOOSE_FIGURE_SHARE * signals.get("text_blocks", 0.0)):
        factor *= tuning.LOOSE_FIGURE_PENALTY
    return factor
