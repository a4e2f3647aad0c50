"""Characters to lines of words: runs along one baseline, joined across word gaps but not across column gutters.

A word is the glyphs between spaces (a right-to-left line put in reading order, a math-font word read as LaTeX);
rotated text (margin stamps, slanted column heads) makes lines of its own.
"""

from __future__ import annotations

import functools
import unicodedata

from services.worker.engines.cpu import tuning
from services.worker.engines.cpu.bidi import is_rtl_text, visual_to_logical
from services.worker.engines.cpu.mathtext import SCRIPT_RATIO, Glyph, word_latex
from services.worker.engines.cpu.model import Box, Line, Word
from services.worker.engines.cpu.textchars import Char

_JOIN_GAP = 1.2  # in line heights: runs on one baseline closer than this are one line, when nothing else tells
_SPLIT_GAP = 2.0  # in line heights: runs on one baseline further apart than this are never one line


def content_runs(chars: list[Char]) -> list[list[Char]]:
    """The characters in content order cut into runs: each next character continues its run when it sits on the
    run's baseline close after its last character (`_continues`). A run ends where the content jumps: at a line's
    end, across a column gutter or a table's cell gap, to wherever the producer wrote next."""
    runs: list[list[Char]] = []
    for char in chars:
        if runs and _continues(runs[-1][-1], char):
            runs[-1].append(char)
        else:
            runs.append([char])
    return runs


def run_text(run: list[Char]) -> str:
    """A run's characters as written, a space where the content has one or the glyphs stand half a size apart (a
    producer that places its words without writing spaces)."""
    parts = [run[0].text] if run else []
    for previous, char in zip(run, run[1:], strict=False):
        parts.append(f" {char.text}" if char.space_before or _apart(previous, char) else char.text)
    return "".join(parts).strip()


def upright_lines(runs: list[list[Char]]) -> list[Line]:
    """Runs (`content_runs`) to lines: the runs along one baseline joined across small gaps (the runs are not
    changed)."""
    runs = sorted(runs, key=lambda run: min(c.box.cy for c in run))
    rows: list[tuple[Box, list[list[Char]]]] = []
    for run in runs:
        box = run_box(run)
        for band, members in reversed(rows[-tuning.ROW_BAND_LOOKBACK:]):
            overlap = box.y_overlap(band)
            # A drop capital or a tall symbol must not pull the lines beside it into one row.
            comparable = max(box.height, band.height) < tuning.ROW_BAND_COMPARABLE * min(box.height, band.height)
            if overlap >= 0.5 * max(box.height, band.height) or (comparable and overlap >= 0.5 * min(
                    box.height, band.height)):
                members.append(run)
                break
        else:
            rows.append((box, [run]))
    spans = []
    for band, members in rows:
        members.sort(key=lambda run: min(c.box.x0 for c in run))
        spans.append((band, [run_box(run) for run in members]))
    merged: list[list[Char]] = []
    for row_index, (_, members) in enumerate(rows):
        boxes = spans[row_index][1]
        current = list(members[0])
        current_box = boxes[0]
        for run, box in zip(members[1:], boxes[1:], strict=True):
            if not _is_gutter(current_box, box, row_index, spans):
                current.extend(run)
                current_box = current_box.union(box)
            else:
                merged.append(current)
                current, current_box = list(run), box
        merged.append(current)
    return [line for line in (_make_line(run) for run in merged) if line is not None]


def _is_gutter(left: Box, right: Box, row_index: int, spans: list[tuple[Box, list[Box]]]) -> bool:
    """Is the gap between two runs on one baseline a column or cell boundary rather than a (stretched) space?

    Clear cases go by width. In between, a gutter is white in most neighbouring rows that reach across it,
    while a wide word space in justified text almost never lines up with the spaces of the rows around it.
    """
    height = min(left.height, right.height) or 1.0
    gap = right.x0 - left.x1
    if gap < 0.5 * height:
        return False
    if gap > _SPLIT_GAP * height:
        return True
    middle = (left.x1 + right.x0) / 2
    reaching = free = 0
    for other_index in range(max(0, row_index - tuning.GUTTER_NEIGHBOUR_ROWS_ABOVE),
                             min(len(spans), row_index + tuning.GUTTER_NEIGHBOUR_ROWS_BELOW)):
        if other_index == row_index:
            continue
        band, boxes = spans[other_index]
        if abs(band.cy - spans[row_index][0].cy) > tuning.GUTTER_NEIGHBOUR_DISTANCE * height:
            continue
        if not boxes or boxes[0].x0 > middle or max(b.x1 for b in boxes) < middle:
            continue
        reaching += 1
        if not any(b.x0 - 1 <= middle <= b.x1 + 1 for b in boxes):
            free += 1
    if reaching >= 2:
        return free >= tuning.GUTTER_FREE_SHARE * reaching
    return gap > _JOIN_GAP * height


def rotated_lines(chars: list[Char]) -> list[Line]:
    """Rotated or slanted text (margin stamps, slanted column heads): one line per run of touching characters in
    content order, words split where the content has spaces (their boxes do not read left to right)."""
    runs: list[list[Char]] = []
    for char in chars:
        previous = runs[-1][-1] if runs else None
        reach = tuning.ROTATED_REACH * max(char.size, previous.size) if previous else 0.0
        if previous and max(char.box.x0 - previous.box.x1, previous.box.x0 - char.box.x1) < reach and max(
                char.box.y0 - previous.box.y1, previous.box.y0 - char.box.y1) < reach:
            runs[-1].append(char)
        else:
            runs.append([char])
    lines: list[Line] = []
    for run in runs:
        words: list[list[Char]] = []
        for char in run:
            if words and not char.space_before:
                words[-1].append(char)
            else:
                words.append([char])
        lines.append(Line([_make_word(word) for word in words], run_box(run)))
    return lines


def _continues(previous: Char, char: Char) -> bool:
    before, box = previous.box, char.box
    height = min(before.y1 - before.y0, box.y1 - box.y0) or 1.0
    tallest = max(before.y1 - before.y0, box.y1 - box.y0)
    if max(0.0, min(before.y1, box.y1) - max(before.y0, box.y0)) < tuning.LINE_MIN_Y_OVERLAP * height:
        return False
    # Characters of about one size sit on one line only at one height; a sub- or superscript is smaller. Without
    # this, the next line of a table cell ("(Diving ducks)" under "Aythya") ran on into the cell beside it, set
    # half a line higher, and the two cells' lines became one with their letters interleaved.
    if height >= tuning.LINE_SCRIPT_RATIO * tallest and abs((before.y0 + before.y1) / 2 - (box.y0 + box.y1) / 2) > (
            tuning.LINE_MAX_SHIFT * tallest):
        return False
    gap = max(box.x0 - before.x1, before.x0 - box.x1)
    return gap < tuning.LINE_MAX_CHAR_GAP * tallest


def _apart(previous: Char, char: Char) -> bool:
    """Glyphs half a size or more apart along the line: two words, whether the content writes a space between them
    or not."""
    return char.box.x0 - previous.box.x1 > 0.5 * max(char.size, previous.size)


def run_box(run: list[Char]) -> Box:
    boxes = [c.box for c in run]
    return Box(min([b.x0 for b in boxes]), min([b.y0 for b in boxes]), max([b.x1 for b in boxes]),
               max([b.y1 for b in boxes]))


def _make_line(run: list[Char]) -> Line | None:
    spaced_orders = {c.order for c in run if c.space_before}
    run = sorted(run, key=lambda c: c.box.cx)
    words: list[list[Char]] = []
    for char in run:
        if words:
            previous = words[-1][-1]
            gap = char.box.x0 - previous.box.x1
            size = max(char.size, previous.size)
            # A space anywhere between the two in content order separates them: RTL text and embedded LTR runs
            # are stored in another order than the one they are shown in.
            low, high = (previous.order, char.order) if previous.order <= char.order else (char.order, previous.order)
            if high - low == 1:  # neighbours in content order, as most are
                spaced = high in spaced_orders
            else:
                spaced = any(order in spaced_orders for order in range(low + 1, min(high, low + 64) + 1))
            # ... unless the glyphs touch: pdfium reports spaces around accents set apart from their letters.
            if not ((spaced and gap > tuning.SPACE_MIN_GAP * size) or _apart(previous, char)
                    or _strong_direction(previous.text) * _strong_direction(char.text) < 0):
                words[-1].append(char)
                continue
        words.append([char])
    built = [_make_word(chars) for chars in words]
    text = "".join(w.text for w in built)
    rtl = is_rtl_text(text)
    if rtl:
        built = visual_to_logical(built)
    if not built:
        return None
    return Line(built, run_box(run), rtl=rtl)


@functools.lru_cache(maxsize=4096)
def _strong_direction(text: str) -> int:
    kind = unicodedata.bidirectional(text[:1]) if text else ""
    return -1 if kind in ("R", "AL") else 1 if kind == "L" else 0


def _make_word(chars: list[Char]) -> Word:
    sizes = sorted([c.size for c in chars])
    styles = [c.style for c in chars]
    bold = sum(1 for s in styles if s[0]) * 2 > len(styles)
    italic = sum(1 for s in styles if s[1]) * 2 > len(styles)
    mono = sum(1 for s in styles if s[2]) * 2 > len(styles)
    links = [c.link for c in chars if c.link]
    math = None
    points = [c.points for c in chars]
    # `word_latex` finds no math in a word without a math-font glyph or a script (a glyph much smaller than the one
    # before it): such words, nearly all of them, are not made into glyphs for it.
    if all(p > 0 for p in points) and (any(s[3] for s in styles) or any(
            after < SCRIPT_RATIO * before for before, after in zip(points, points[1:], strict=False))):
        math = word_latex([Glyph(c.text, c.points, c.box.cy, c.style[3], c.style[4], not (c.style[1] or c.style[3]))
                           for c in chars])
    return Word("".join(c.text for c in chars), run_box(chars), sizes[len(sizes) // 2], bold, italic, mono,
                links[0] if links else "", math)
