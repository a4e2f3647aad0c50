"""A page's tables read as its words' boxes and its text layer's runs tell them: page columns taken for one table.

A reference card, an index or two papers side by side can come out of the layout as one table whose rows run
across the page's columns: every word is right, recognition and coverage stay high, and the reading order is lost.
Three readings tell such a table (`table_readings`): a page gutter the text around it keeps to (`guttered`), its
wide column strips breaking into sections at different heights (`breaks`), and on a text-layer page the order its
producer wrote it in (`disorder`). `page_column_penalties` and the `table_*_penalty` functions are what they take
off the table's and the page's confidence (`routes.settle`); `confidence.structure_signals` records them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from services.core.elements import FURNITURE, BBox, Element, ElementType
from services.worker.engines.base import PageWord
from services.worker.engines.cpu import tuning

_WORD = re.compile(r"\w+", re.UNICODE)


def inside(box: BBox, area: BBox) -> bool:
    """The box's centre lies in `area`."""
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    return area[0] <= cx <= area[2] and area[1] <= cy <= area[3]


def content_boxes(tree: Sequence[Element], words: Sequence[PageWord],
                  frame: Callable[[BBox], BBox] | None = None) -> list[BBox]:
    """The boxes of the page's words outside its running heads and feet (`FURNITURE`), each box and furniture area
    taken through `frame` (the frame the page was read in, `table_readings`' `upright`; as given without it)."""
    return [word.bbox for word in content_words(tree, words, frame)]


def content_words(tree: Sequence[Element], words: Sequence[PageWord],
                  frame: Callable[[BBox], BBox] | None = None) -> list[PageWord]:
    """The page's words outside its running heads and feet, each boxed through `frame` (`content_boxes`')."""
    framed = frame or (lambda box: box)
    furniture = [framed(e.bbox) for e in tree if e.type in FURNITURE and e.bbox is not None]
    placed = (PageWord(w.text, framed(w.bbox)) for w in words)
    return [word for word in placed if not any(inside(word.bbox, area) for area in furniture)]


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
    producer's jumps the table's reading does not read on (`disorder`, `table_order_disorder`; 0 otherwise);
    `ordered`: the page has a producer's order to ask (a text layer's runs), which a page read by OCR has not."""

    element_id: str
    words: int
    guttered: bool
    breaks: int
    disorder: float = 0.0
    ordered: bool = True

    @property
    def flowing(self) -> bool:
        """Page columns that break into sections at different heights: `tuning.TABLE_FLOW_MIN_BREAKS` times on a
        page whose producer's order also tells page columns from a table, `TABLE_FLOW_MIN_BREAKS_UNORDERED` on a
        page read by OCR, where the breaks are the only reading of them."""
        least = tuning.TABLE_FLOW_MIN_BREAKS if self.ordered else tuning.TABLE_FLOW_MIN_BREAKS_UNORDERED
        return self.breaks >= least

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
    content = content_boxes(tree, words, frame)
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
        readings.append(TableReading(element_id, len(held), guttered, breaks, disorder, ordered=bool(runs)))
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


def _page_columns(strips: Sequence[Sequence[BBox]], min_width: float,
                  one_strip_runs: bool = False) -> list[tuple[int, int, list[BBox]]]:
    """The table's column strips tiled, left to right, into page columns set alike: k ≥ 2 runs, each a run of
    narrow strips (an index's entries and their page numbers, a card's description and its syntax) or one wide strip
    (a page column whose heading closed its inner gap), each at least `min_width` wide and the narrowest at least
    `tuning.TABLE_FLOW_ALIKE` of the widest, as the columns of one page are, one of them at least of two strips
    (any, with `one_strip_runs`); each as its first and last strip and its boxes. The first run is the narrowest
    that is wide enough (the most runs: three page columns of two strips may tile alike as two runs of three too,
    each cutting the middle column in half), each next run the fewest strips that reach its width. Empty when no
    tiling exists (a real table's label column beside its figures)."""
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
                and (one_strip_runs or any(last > first for first, last in spans))):
            return [(first, last, [box for strip in strips[first:last + 1] for box in strip]) for first, last in spans]
    return []


def table_flow_breaks(boxes: Sequence[BBox]) -> int:
    """How often two of a table's page columns break into sections at different heights. Its words are cut into
    column strips at its column gaps; a page column is a strip at least `tuning.TABLE_FLOW_MIN_WIDTH` word heights
    wide, or a run of narrow strips when the strips tile into runs set alike (`_page_columns`: an index's entries
    beside their page numbers); a table with fewer than two of those is tiled alike again into narrower runs, one
    strip each allowed (`tuning.TABLE_FLOW_MIN_ALIKE_WIDTH`: an index set in three columns). For each pair of page
    columns side by side, the fewer of the two counts "a section break of one (a blank line, a heading set larger)
    where the other writes a line of text"; the most over the pairs. Page columns taken for one table break so, each
    at its own headings. A real table's blank rows and header rows run across all of its columns; where one cell
    runs longer than its row's others, or a sparse column leaves cells empty, the blanks are in its narrow columns
    of figures and short labels, which are not counted unless they tile the table into runs set alike."""
    return _flow_breaks(boxes, *_table_gaps(boxes)) if boxes else 0


def _flow_columns(boxes: Sequence[BBox], height: float,
                  gaps: Sequence[tuple[float, float]]) -> list[tuple[int, int, list[BBox]]]:
    """A table's page columns as `table_flow_breaks` finds them (its wide column strips, and the runs of narrow strips
    that tile it alike; with fewer than two of those, its strips tiled alike down to
    `tuning.TABLE_FLOW_MIN_ALIKE_WIDTH`), each as its first and last strip and its boxes; given its median word
    height and column gaps (`_table_gaps`)."""
    edges = [(left + right) / 2 for left, right in gaps]
    strips: list[list[BBox]] = [[] for _ in range(len(edges) + 1)]
    for box in boxes:
        strips[sum(1 for edge in edges if (box[0] + box[2]) / 2 > edge)].append(box)
    strips = [strip for strip in strips if strip]
    min_width = tuning.TABLE_FLOW_MIN_WIDTH * height
    columns = [(n, n, strip) for n, strip in enumerate(strips) if _width(strip) >= min_width]
    columns += [run for run in _page_columns(strips, min_width) if run[1] > run[0]]  # wide strips are in
    if len(columns) >= 2:
        return columns
    # fewer than two: a page set in three or four columns (an index in a larger type) may tile the table narrower,
    # each page column maybe one strip (an entry run into its page number leaves no gap to cut it at)
    return _page_columns(strips, tuning.TABLE_FLOW_MIN_ALIKE_WIDTH * height, one_strip_runs=True) or columns


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


def table_flow_share(tree: Sequence[Element], words: Sequence[PageWord],
                     runs: Sequence[tuple[str, BBox]] = ()) -> tuple[float, int]:
    """Share of the page's words in a table two of whose page columns break into sections at different heights
    often enough (`TableReading.flowing`: a text-layer page, given its `runs`, asks more breaks than a page read by
    OCR), and the most breaks of a table (`table_flow_breaks`)."""
    tables = table_readings(tree, words, runs=runs)
    return tables.share(lambda r: r.flowing), tables.most_breaks


def page_column_penalties(tables: PageTables) -> dict[str, float]:
    """What each table read from page columns takes off its own confidence, by element id: the gutter's and the
    section breaks' weights (`tuning.TABLE_GUTTER_PENALTY`, `TABLE_FLOW_PENALTY`) and the order's
    (`TABLE_ORDER_PENALTY`, a table at least `TABLE_ORDER_MIN_DISORDER` disordered), the page losing them per unit
    of share. The table is where the reading order was lost, so a reviewer is sent to it."""
    taken = {r.element_id: tuning.TABLE_GUTTER_PENALTY * r.guttered + tuning.TABLE_FLOW_PENALTY * r.flowing
             + tuning.TABLE_ORDER_PENALTY * r.disordered for r in tables.readings}
    return {element_id: weight for element_id, weight in taken.items() if weight}


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
