"""Per-page confidence in [0, 1] and the signals behind it, so `balanced` mode and customers can act on it."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from html.parser import HTMLParser

from services.core.elements import FURNITURE, BBox, Element, ElementType
from services.worker.engines.base import PageWord
from services.worker.engines.cpu import tuning
from services.worker.engines.cpu.model import PageText

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


def inside(box: BBox, area: BBox) -> bool:
    """The box's centre lies in `area`."""
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    return area[0] <= cx <= area[2] and area[1] <= cy <= area[3]


def _column_gaps(boxes: Sequence[BBox], min_width: float) -> list[tuple[float, float]]:
    """The vertical bands, at least `min_width` wide, that none of the boxes reaches into, between the leftmost
    box and the rightmost: a table's column gaps, from its words."""
    gaps: list[tuple[float, float]] = []
    reach: float | None = None
    for x0, _, x1, _ in sorted(boxes):
        if reach is not None and x0 - reach >= min_width:
            gaps.append((reach, x0))
        reach = x1 if reach is None else max(reach, x1)
    return gaps


def _gutter_runs_on(gap: tuple[float, float], outside: Sequence[BBox]) -> bool:
    """Does a table's column gap run on through the page's text outside the table (the words above, below or
    beside it that share its width): none of them reaches into the gap's core, and enough stand on each side?"""
    left, right = gap
    trim = tuning.TABLE_GUTTER_CORE_TRIM * (right - left)
    middle = (left + right) / 2
    if any(x0 < right - trim and x1 > left + trim for x0, _, x1, _ in outside):
        return False
    on_left = sum(1 for _, _, x1, _ in outside if x1 <= middle)
    on_right = sum(1 for x0, _, _, _ in outside if x0 >= middle)
    return min(on_left, on_right) >= tuning.TABLE_GUTTER_MIN_SIDE_WORDS


@dataclass(frozen=True, slots=True)
class TableReading:
    """One table of a page as its words' boxes tell it: `element_id`, its `words` (furniture left out), whether
    one of its column gaps is a gutter of the page (`guttered`), how often two of its page columns (wide column
    strips, or runs of narrow ones set alike) break into sections at different heights (`breaks`,
    `table_flow_breaks`) and, on a text-layer page, for a table of two page columns or more, the share of its
    producer's jumps the table's reading does not read on (`disorder`, `table_order_disorder`; 0 otherwise)."""

    element_id: str
    words: int
    guttered: bool
    breaks: int
    disorder: float = 0.0

    @property
    def flowing(self) -> bool:
        return self.breaks >= tuning.TABLE_FLOW_MIN_BREAKS

    @property
    def disordered(self) -> bool:
        return self.disorder >= tuning.TABLE_ORDER_MIN_DISORDER


@dataclass(frozen=True, slots=True)
class PageTables:
    """The page's tables as their words' boxes tell them (`table_readings`), and the page's words (furniture left
    out): read once a page, for its signals and for each table's own penalty."""

    readings: list[TableReading]
    words: int

    def share(self, counted: Callable[[TableReading], bool]) -> float:
        """Share of the page's words that sit in the tables `counted` picks."""
        return min(1.0, sum(r.words for r in self.readings if counted(r)) / self.words) if self.words else 0.0

    @property
    def most_breaks(self) -> int:
        return max((r.breaks for r in self.readings), default=0)


def table_readings(tree: Sequence[Element], words: Sequence[PageWord],
                   upright: Callable[[BBox], BBox] | None = None,
                   runs: Sequence[tuple[str, BBox]] = ()) -> PageTables:
    """Each table of the page with what its words' boxes say of it, and the page's words (furniture left out);
    `upright` takes every box into the frame the page was read in (`geometry.upright_map`: a scan turned a quarter
    to be read has its lines across again); `runs`, a text-layer page's runs in content order, each its text and
    box (`PageText.runs`), for the tables' `disorder`.

    A gap is a page gutter when it runs on through the page's own text outside the table, which keeps to either side
    of it. Page columns (a reference card, two papers side by side) taken for one table look so; a real table's gaps
    end at its edges, where the text around it runs across them. A table that is all the page's text has nothing
    around it to tell: there its strips' section breaks do."""
    frame = upright or (lambda box: box)
    tables = [(e.id, frame(e.bbox)) for e in tree if e.type == ElementType.TABLE and e.bbox is not None]
    if not tables:
        return PageTables([], 0)
    furniture = [frame(e.bbox) for e in tree if e.type in FURNITURE and e.bbox is not None]
    content = [box for box in (frame(w.bbox) for w in words) if not any(inside(box, area) for area in furniture)]
    outside = [box for box in content if not any(inside(box, area) for _, area in tables)]
    texts = {e.id: e.text for e in tree}
    readings = []
    for element_id, area in tables:
        held = [box for box in content if inside(box, area)]
        guttered, breaks, disorder = False, 0, 0.0
        if held:
            height, gaps = _table_gaps(held)
            beside = [box for box in outside if box[2] > area[0] and box[0] < area[2]]
            guttered = any(_gutter_runs_on(gap, beside) for gap in gaps)
            columns = _flow_columns(held, height, gaps)
            breaks = _column_breaks(columns, height)
            if runs and len(columns) >= 2:
                disorder = table_order_disorder([text for text, box in runs if inside(frame(box), area)],
                                                texts[element_id])
        readings.append(TableReading(element_id, len(held), guttered, breaks, disorder))
    return PageTables(readings, len(content))


def table_order_disorder(runs: Sequence[str], text: str) -> float:
    """Share of the producer's jumps between a table's runs (`content_order`, reaching `tuning.TABLE_ORDER_REACH`
    words on) that the table's text does not read on; 0 under `tuning.TABLE_ORDER_MIN_JUMPS` jumps counted.

    Asked only of a table of two page columns or more (`_flow_columns`): page columns with a producer's order down
    each of them, read across as one table's rows, leave about half of it unread on (a card's entry, its
    description then its syntax, is read on; the jump to the entry below is not), where a real table set in wide
    columns is written row by row, as read. A table of narrow columns, which some producers write column by column,
    is not asked."""
    read_on, counted = content_order(runs, [text], tuning.TABLE_ORDER_REACH)
    return round(1 - read_on / counted, 4) if counted >= tuning.TABLE_ORDER_MIN_JUMPS else 0.0


def _table_gaps(boxes: Sequence[BBox]) -> tuple[float, list[tuple[float, float]]]:
    """A table's median word height and its column gaps (`_column_gaps`, at least `tuning.TABLE_GUTTER_MIN_GAP`
    word heights wide): read once, for the gutter and for the section breaks."""
    heights = sorted(box[3] - box[1] for box in boxes)
    height = heights[len(heights) // 2]
    return height, _column_gaps(boxes, tuning.TABLE_GUTTER_MIN_GAP * height)


def table_gutter_share(tree: Sequence[Element], words: Sequence[PageWord]) -> float:
    """Share of the page's words that sit in a table one of whose column gaps is a gutter of the page
    (`table_readings`)."""
    return table_readings(tree, words).share(lambda r: r.guttered)


def _lines(boxes: Sequence[BBox], height: float) -> list[tuple[float, bool]]:
    """The boxes' visual lines, top to bottom, each its centre and whether it is set larger than the table's words (a
    heading: its median box at least `tuning.TABLE_FLOW_HEADING` word heights tall; a superscript note mark lifts
    one box, not the median): a box joins the line whose first box's centre is within half a word height of its
    own."""
    lines: list[tuple[float, list[float]]] = []
    for box in sorted(boxes, key=lambda b: (b[1] + b[3]) / 2):
        centre = (box[1] + box[3]) / 2
        if lines and centre - lines[-1][0] <= 0.5 * height:
            lines[-1][1].append(box[3] - box[1])
        else:
            lines.append((centre, [box[3] - box[1]]))
    return [(centre, sorted(talls)[len(talls) // 2] >= tuning.TABLE_FLOW_HEADING * height) for centre, talls in lines]


def _section_breaks(lines: Sequence[tuple[float, bool]], pitch: float) -> list[tuple[float, float]]:
    """Where a strip breaks into sections, as the bands another strip's line would stand in: a blank line (two of
    its lines at least `tuning.TABLE_FLOW_MIN_BLANK` line pitches apart), or a heading not under one."""
    breaks: list[tuple[float, float]] = []
    for n, (centre, heading) in enumerate(lines):
        above = lines[n - 1][0] if n else None
        if above is not None and centre - above >= tuning.TABLE_FLOW_MIN_BLANK * pitch:
            breaks.append((above + 0.5 * pitch, centre - 0.5 * pitch))
        elif heading:
            breaks.append((centre - 0.5 * pitch, centre + 0.5 * pitch))
    return breaks


def _crossings(breaks: Sequence[tuple[float, float]], lines: Sequence[tuple[float, bool]]) -> int:
    """How many of one strip's section breaks another strip writes a line of text (not a heading) into."""
    return sum(1 for top, bottom in breaks if any(top < centre < bottom and not heading for centre, heading in lines))


def _width(boxes: Sequence[BBox]) -> float:
    return max(b[2] for b in boxes) - min(b[0] for b in boxes)


def _page_columns(strips: Sequence[Sequence[BBox]], min_width: float) -> list[tuple[int, int, list[BBox]]]:
    """The table's column strips tiled, left to right, into page columns set alike: k ≥ 2 runs, each a run of
    narrow strips (an index's entries and their page numbers, a card's description and its syntax) or one wide strip
    (a page column whose heading closed its inner gap), each at least `min_width` wide and the narrowest at least
    `tuning.TABLE_FLOW_ALIKE` of the widest, as the columns of one page are, one of them at least of two strips;
    each as its first and last strip and its boxes. The first run is the narrowest that is wide enough (the most
    runs: three page columns of two strips may tile alike as two runs of three too, each cutting the middle column
    in half), each next run the fewest strips that reach its width. Empty when no tiling exists (a real table's
    label column beside its figures)."""
    count = len(strips)
    lefts = [min(box[0] for box in strip) for strip in strips]
    rights = [max(box[2] for box in strip) for strip in strips]

    def width(first: int, last: int) -> float:  # what `_width` gives for the strips' boxes joined
        return max(rights[first:last + 1]) - min(lefts[first:last + 1])

    for end in range(count - 1):
        target = width(0, end)
        if target < min_width:
            continue
        spans = [(0, end)]
        while spans[-1][1] < count - 1:
            first = last = spans[-1][1] + 1
            while last < count - 1 and width(first, last) < tuning.TABLE_FLOW_ALIKE * target:
                last += 1
            spans.append((first, last))
        widths = [width(first, last) for first, last in spans]
        if (min(widths) >= min_width and min(widths) >= tuning.TABLE_FLOW_ALIKE * max(widths)
                and any(last > first for first, last in spans)):
            return [(first, last, [box for strip in strips[first:last + 1] for box in strip]) for first, last in spans]
    return []


def table_flow_breaks(boxes: Sequence[BBox]) -> int:
    """How often two of a table's page columns break into sections at different heights. Its words are cut into
    column strips at its column gaps; a page column is a strip at least `tuning.TABLE_FLOW_MIN_WIDTH` word heights
    wide, or a run of narrow strips when the strips tile into runs set alike (`_page_columns`: an index's entries
    beside their page numbers). For each pair of page columns side by side, the fewer of the two counts "a section
    break of one (a blank line, a heading set larger) where the other writes a line of text"; the most over the
    pairs. Page columns taken for one table break so, each at its own headings. A real table's blank rows and
    header rows run across all of its columns; where one cell runs longer than its row's others, or a sparse column
    leaves cells empty, the blanks are in its narrow columns of figures and short labels, which are not counted
    unless they tile the table into runs set alike."""
    return _flow_breaks(boxes, *_table_gaps(boxes)) if boxes else 0


def _flow_columns(boxes: Sequence[BBox], height: float,
                  gaps: Sequence[tuple[float, float]]) -> list[tuple[int, int, list[BBox]]]:
    """A table's page columns as `table_flow_breaks` finds them (its wide column strips, and the runs of narrow strips
    that tile it alike), each as its first and last strip and its boxes; given its median word height and column
    gaps (`_table_gaps`)."""
    edges = [(left + right) / 2 for left, right in gaps]
    strips: list[list[BBox]] = [[] for _ in range(len(edges) + 1)]
    for box in boxes:
        strips[sum(1 for edge in edges if (box[0] + box[2]) / 2 > edge)].append(box)
    strips = [strip for strip in strips if strip]
    min_width = tuning.TABLE_FLOW_MIN_WIDTH * height
    columns = [(n, n, strip) for n, strip in enumerate(strips) if _width(strip) >= min_width]
    return columns + [run for run in _page_columns(strips, min_width) if run[1] > run[0]]  # wide strips are in


def _flow_breaks(boxes: Sequence[BBox], height: float, gaps: Sequence[tuple[float, float]]) -> int:
    """`table_flow_breaks` of a table's boxes, given its median word height and column gaps (`_table_gaps`)."""
    return _column_breaks(_flow_columns(boxes, height, gaps), height)


def _column_breaks(columns: Sequence[tuple[int, int, list[BBox]]], height: float) -> int:
    """`table_flow_breaks` of a table's page columns (`_flow_columns`)."""
    lines = [_lines(column, height) for _, _, column in columns]
    steps = sorted(lower[0] - upper[0] for column_lines in lines
                   for upper, lower in zip(column_lines, column_lines[1:], strict=False))
    if not steps:
        return 0
    pitch = steps[len(steps) // 2]
    bands = [_section_breaks(column_lines, pitch) for column_lines in lines]
    most = 0
    for i, (_, last, _) in enumerate(columns):
        for j, (first, _, _) in enumerate(columns):
            if first > last:
                most = max(most, min(_crossings(bands[i], lines[j]), _crossings(bands[j], lines[i])))
    return most


def table_flow_share(tree: Sequence[Element], words: Sequence[PageWord]) -> tuple[float, int]:
    """Share of the page's words in a table two of whose page columns break into sections at different heights at
    least `tuning.TABLE_FLOW_MIN_BREAKS` times (`table_flow_breaks`), and the most breaks of a table."""
    tables = table_readings(tree, words)
    return tables.share(lambda r: r.flowing), tables.most_breaks


def page_column_penalties(tables: PageTables) -> dict[str, float]:
    """What each table read from page columns takes off its own confidence, by element id: the gutter's and the
    section breaks' weights (`tuning.TABLE_GUTTER_PENALTY`, `TABLE_FLOW_PENALTY`) and the order's
    (`TABLE_ORDER_PENALTY`, a table at least `TABLE_ORDER_MIN_DISORDER` disordered), the page losing them per unit
    of share. The table is where the reading order was lost, so a reviewer is sent to it."""
    taken = {r.element_id: tuning.TABLE_GUTTER_PENALTY * r.guttered + tuning.TABLE_FLOW_PENALTY * r.flowing
             + tuning.TABLE_ORDER_PENALTY * r.disordered for r in tables.readings}
    return {element_id: weight for element_id, weight in taken.items() if weight}


def structure_signals(tree: list[Element], page_tables: PageTables | None = None) -> dict[str, float]:
    """How consistent the page's tables are, how much of the page's text sits in wordy table cells and (given the
    page's tables as its word boxes tell them, `table_readings`) in tables a page gutter runs through or whose
    strips break apart, and whether figures sit loose in short lines where no table was found (a table read as
    paragraphs)."""
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


def table_gutter_penalty(signals: Mapping[str, float]) -> float:
    """What a table a page gutter runs through takes off the page's confidence (after `structure_factor`, with the
    table-prose penalty): page columns read across as one table's rows keep every word, so recognition and
    coverage stay high while the reading order is lost."""
    return tuning.TABLE_GUTTER_PENALTY * signals.get("table_gutter_share", 0.0)


def table_flow_penalty(signals: Mapping[str, float]) -> float:
    """What a table whose column strips break into sections at different heights takes off the page's confidence
    (after the gutter penalty): page columns read across as one table's rows, with nothing around them for a
    gutter to run through, keep every word while the reading order is lost."""
    return tuning.TABLE_FLOW_PENALTY * signals.get("table_flow_share", 0.0)


def content_order(runs: Sequence[str], texts: Sequence[str], reach: int = 1) -> tuple[int, int]:
    """How often the output reads on where the text layer's producer wrote on: of the jumps from one run of the
    text layer to the next in content order (`textlines.content_runs`: at a line's end, across a cell gap, to the
    next column), the ones whose two words (the run's last, the next run's first) the output `texts`, in reading
    order, also writes one after the other, at most `reach` words on (or as one word, a hyphenated word rejoined);
    (read on, counted). A jump is counted only when the output writes both words somewhere (or the joined word).

    A producer writes a page in the order it is to be read, mostly: a paragraph's lines one after another, a table
    row by row, a reference card's entry (its description, then its syntax) before the entry below it, column by
    column. Page columns taken for one table's rows, or a card's descriptions read as one paragraph beside a code
    block of its syntax, keep every word in the wrong order, and most of the jumps are not read on."""
    tokens = [token.lower() for text in texts for token in _WORD.findall(text)]
    places: dict[str, set[int]] = {}
    for n, token in enumerate(tokens):
        places.setdefault(token, set()).add(n)
    read_on = counted = 0
    ends = [(found[0].lower(), found[-1].lower()) for found in (_WORD.findall(run) for run in runs) if found]
    for (_, last), (first, _) in zip(ends, ends[1:], strict=False):
        joined = last + first in places  # a word hyphenated at the line's end, rejoined
        if not joined and (last not in places or first not in places):
            continue
        counted += 1
        if joined or any(n + step in places[first] for n in places[last] for step in range(1, reach + 1)):
            read_on += 1
    return read_on, counted


def table_order_penalty(signals: Mapping[str, float]) -> float:
    """What tables read in another order than their producer wrote them take off the page's confidence (after the
    section-break penalty), per unit of the share of the page's words they hold (`table_order_share`: tables at
    least `tuning.TABLE_ORDER_MIN_DISORDER` disordered): page columns read across as one table's rows keep every word
    while the order is lost, and with sections long enough no break tells them."""
    return tuning.TABLE_ORDER_PENALTY * signals.get("table_order_share", 0.0)


def structure_factor(signals: dict[str, float]) -> float:
    """What the page's structure takes off its confidence (1: nothing)."""
    factor = signals.get("table_consistency", 1.0)
    loose = signals.get("loose_figure_lines", 0.0)
    if ("table_consistency" not in signals and loose >= tuning.LOOSE_FIGURE_MIN_LINES
            and loose >= tuning.LOOSE_FIGURE_SHARE * signals.get("text_blocks", 0.0)):
        factor *= tuning.LOOSE_FIGURE_PENALTY
    return factor
