"""A PDF page's text layer through pdfium: characters with boxes and styles, grouped into words and lines,
plus the ruling lines, link targets and the signals that tell a real text layer from a garbage one."""

from __future__ import annotations

import ctypes
import functools
import math
import unicodedata
from dataclasses import dataclass

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from services.core.pdf import page_text
from services.worker.engines.cpu import tuning
from services.worker.engines.cpu.bidi import is_rtl_text, visual_to_logical
from services.worker.engines.cpu.mathtext import SCRIPT_RATIO, Glyph, alphabet_of, is_math_font, word_latex
from services.worker.engines.cpu.model import Box, Line, PageText, Segment, Shape, Word
from services.worker.engines.cpu.shapes import shape_of

_BOLD_NAMES = ("bold", "black", "heavy", "semibold", "demi", "-bd", ",bd")
_ITALIC_NAMES = ("italic", "oblique", "-it", ",it")
_MONO_NAMES = ("mono", "courier", "consol", "typewriter", "cmtt", "menlo", "inconsolata", "sfmono", "sftt")
_FIXED_PITCH_FLAG = 1
_ITALIC_FLAG = 64
# Spacing accents and the combining marks they stand for.
_ACCENTS = {"´": "\u0301", "`": "\u0300", "ˆ": "\u0302", "ˇ": "\u030c", "¨": "\u0308", "˜": "\u0303", "¯": "\u0304",
            "˘": "\u0306", "˙": "\u0307", "˚": "\u030a", "¸": "\u0327", "˛": "\u0328", "˝": "\u030b"}
_LEADER_DOTS = frozenset(".·․‧∙⋅…")
_MIN_LEADER = 4
_JOIN_GAP = 1.2  # in line heights: runs on one baseline closer than this are one line, when nothing else tells
_SPLIT_GAP = 2.0  # in line heights: runs on one baseline further apart than this are never one line


@dataclass(slots=True)
class _Char:
    text: str
    box: Box
    size: float
    style: tuple[bool, bool, bool, bool, str]  # bold, italic, mono, math font, math alphabet
    space_before: bool  # a space separates this character from the one before it in content order
    order: int = 0  # position in content order
    link: str = ""
    points: float = 0.0  # font size in points (0 when unknown)


class _Transform:
    """PDF user space (bottom-left origin) to display space (top-left origin, page rotation applied)."""

    def __init__(self, left: float, bottom: float, right: float, top: float, rotation: int) -> None:
        self.left, self.bottom, self.right, self.top = left, bottom, right, top
        self.rotation = rotation % 360
        w, h = right - left, top - bottom
        self.width, self.height = (h, w) if self.rotation in (90, 270) else (w, h)

    def point(self, x: float, y: float) -> tuple[float, float]:
        u, v = x - self.left, self.top - y  # unrotated, top-left origin
        w, h = self.right - self.left, self.top - self.bottom
        if self.rotation == 90:
            return h - v, u
        if self.rotation == 180:
            return w - u, h - v
        if self.rotation == 270:
            return v, w - u
        return u, v

    def box(self, left: float, bottom: float, right: float, top: float) -> Box:
        xa, ya = self.point(left, bottom)
        xb, yb = self.point(right, top)
        return Box(min(xa, xb), min(ya, yb), max(xa, xb), max(ya, yb))


def read_page(pdf_bytes: bytes) -> PageText:
    """Page 0 of a (single-page) PDF as lines of styled words, ruling lines and text-layer health signals."""
    with page_text(pdf_bytes) as opened:
        return _read(opened.pdf, opened.page, opened.textpage)


def _read(pdf: pdfium.PdfDocument, page: pdfium.PdfPage, textpage: pdfium.PdfTextPage) -> PageText:
    left, bottom, right, top = page.get_cropbox()
    transform = _Transform(left, bottom, right, top, page.get_rotation())
    result = PageText(width=transform.width, height=transform.height)
    links = _links(pdf, page, transform)
    result.rules, result.image_coverage = _graphics(page, transform, result.images, result.shapes)
    chars, rotated = _chars(textpage, transform, links, result)
    result.lines = _lines(drop_leaders(attach_accents(chars)))
    result.margin_lines = _rotated_lines(drop_leaders(rotated))
    return result


def attach_accents(chars: list[_Char]) -> list[_Char]:
    """Accents TeX and others set as glyphs of their own ("Ja´n") are put back on the letter under them ("Ján").

    The accent's letter is found by position (the accent may come several characters later in content order);
    the space pdfium reports around a displaced accent is dropped when the letters around it touch.
    """
    absorbed: set[int] = set()
    for index, char in enumerate(chars):
        combining = _ACCENTS.get(char.text)
        if combining is None:
            continue
        centre = char.box.cx
        # TeX may set a line's accents after all its letters: look back along the whole line.
        candidates = [j for j in range(max(0, index - tuning.ACCENT_LOOKBACK), min(len(chars), index + 3))
                      if j != index and j not in absorbed and chars[j].text.isalpha() and len(chars[j].text) == 1
                      and chars[j].box.x0 - 0.5 <= centre <= chars[j].box.x1 + 0.5
                      and chars[j].box.y_overlap(char.box) > 0.5 * char.box.height]
        if not candidates:
            continue
        letter = chars[min(candidates, key=lambda j: abs(j - index))]
        base = "i" if letter.text == "ı" else "j" if letter.text == "ȷ" else letter.text
        letter.text = unicodedata.normalize("NFC", base + combining)
        absorbed.add(index)
        after = index + 1
        if after < len(chars) and index > 0 and chars[after].space_before:
            before = chars[index - 1]
            if 0 <= chars[after].box.x0 - before.box.x1 < tuning.ACCENT_SPACE_GAP * max(1.0, before.box.height):
                chars[after].space_before = False
    return [char for index, char in enumerate(chars) if index not in absorbed]


def drop_leaders(chars: list[_Char]) -> list[_Char]:
    """Dot leaders (". . . . ." from a label to its figure, or a dotted rule) carry no text, and a leader drawn
    under its label would interleave with the label's letters: runs of four or more leader dots in content order
    are dropped, leaving a gap."""
    out: list[_Char] = []
    count = len(chars)
    index = 0
    while index < count:
        if chars[index].text not in _LEADER_DOTS:
            out.append(chars[index])
            index += 1
            continue
        end = index + 1
        while end < count and chars[end].text in _LEADER_DOTS:
            end += 1
        if end - index >= _MIN_LEADER:
            if end < count:
                chars[end].space_before = True
        else:
            out.extend(chars[index:end])
        index = end
    return out


# pdfium's text object of a character as a plain address (None for none): the key its style is kept under. The
# bindings' own prototype returns a pointer object, and turning that into an address cost more than the call.
_TEXT_OBJECT_ADDRESS = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int)(
    ctypes.cast(pdfium_c.FPDFText_GetTextObject, ctypes.c_void_p).value or 0)
_SKIP, _SPACE = "", " "  # what a code point is to `_chars` when it is not a character of a word


def _code_kind(code: int) -> str:
    """A code point (after the hyphen mark is mapped) as `_chars` takes it: skipped, a space, or its text."""
    if code in (0, 0xFFFE, 0xFFFF) or code > 0x10FFFF:
        return _SKIP
    text = chr(code)
    if text.isspace() or code in (0x00A0, 0x200B) or unicodedata.category(text) == "Cc":
        return _SPACE
    return text


def _chars(textpage: pdfium.PdfTextPage, transform: _Transform, links: list[tuple[Box, str]],
           result: PageText) -> tuple[list[_Char], list[_Char]]:
    """The page's characters in content order, upright ones and rotated ones apart.

    pdfium answers one character at a time, a ctypes call each, so per character only what differs between
    characters is asked (code, map error, text object, box, angle); the style and the font size are a text
    object's (pdfium's `GetCharFontSize` reads the object's), asked once per object."""
    raw = textpage.raw
    address = ctypes.cast(raw, ctypes.c_void_p)
    count = pdfium_c.FPDFText_CountChars(raw)
    rect = pdfium_c.FS_RECTF()
    get_unicode, is_hyphen = pdfium_c.FPDFText_GetUnicode, pdfium_c.FPDFText_IsHyphen
    map_error, loose_box = pdfium_c.FPDFText_HasUnicodeMapError, pdfium_c.FPDFText_GetLooseCharBox
    char_angle, text_object = pdfium_c.FPDFText_GetCharAngle, _TEXT_OBJECT_ADDRESS
    kinds: dict[int, str] = {}
    # text object -> (style, invisible, font size in points)
    objects: dict[int | None, tuple[tuple[bool, bool, bool, bool, str], bool, float]] = {}
    to_box = transform.box
    turn = math.radians(transform.rotation)
    chars: list[_Char] = []
    rotated: list[_Char] = []
    space_pending = False
    high_surrogate = 0
    seen = unmapped = invisible_chars = 0
    for index in range(count):
        code = get_unicode(raw, index)
        if 0xD800 <= code <= 0xDBFF:
            high_surrogate = code
            continue
        if 0xDC00 <= code <= 0xDFFF:
            if not high_surrogate:
                continue
            code = 0x10000 + ((high_surrogate - 0xD800) << 10) + (code - 0xDC00)
        high_surrogate = 0
        if code == 2 or (code == 0xFFFE and is_hyphen(raw, index)):
            code = 0x2D  # pdfium's mark for a hyphen that breaks a word at the end of a line
        kind = kinds.get(code)
        if kind is None:
            kind = kinds[code] = _code_kind(code)
        if kind == _SPACE:
            space_pending = True
            continue
        if kind == _SKIP:
            continue
        seen += 1
        if map_error(raw, index) or code == 0xFFFD:
            unmapped += 1
        key = text_object(address, index)
        entry = objects.get(key)
        if entry is None:
            obj = pdfium_c.FPDFText_GetTextObject(raw, index)
            style, invisible = _style(raw, index, obj)
            entry = objects[key] = (style, invisible, pdfium_c.FPDFText_GetFontSize(raw, index))
        if entry[1]:
            invisible_chars += 1
        if not loose_box(raw, index, rect):
            continue
        box = to_box(rect.left, rect.bottom, rect.right, rect.top)
        if box.x1 - box.x0 <= 0 and box.y1 - box.y0 <= 0:
            continue
        angle = char_angle(raw, index)
        upright = angle < 0 or _near_multiple(angle + turn, 2 * math.pi)
        char = _Char(_normalize_char(kind), box, (box.y1 - box.y0) if upright else (box.x1 - box.x0), entry[0],
                     space_pending, len(chars) + len(rotated), _link_at(links, box) if links else "", entry[2])
        space_pending = False
        (chars if upright else rotated).append(char)
    result.chars += seen
    result.unmapped_chars += unmapped
    result.invisible_chars += invisible_chars
    return chars, rotated


def _near_multiple(angle: float, period: float) -> bool:
    remainder = angle % period
    return min(remainder, period - remainder) < 0.1


def _normalize_char(text: str) -> str:
    code = ord(text)
    # Ligatures and Arabic presentation forms are display shapes of ordinary letters.
    if 0xFB00 <= code <= 0xFB06 or 0x1D400 <= code <= 0x1D7FF:  # ligatures, mathematical alphanumerics
        return unicodedata.normalize("NFKC", text)
    if 0xFB50 <= code <= 0xFDFF or 0xFE70 <= code <= 0xFEFF:
        # Arabic ligatures expand in logical order; the line is later read from visual order, so pre-reverse.
        return unicodedata.normalize("NFKC", text)[::-1]
    return text


def _style(raw: object, index: int, obj: object) -> tuple[tuple[bool, bool, bool, bool, str], bool]:
    buffer = ctypes.create_string_buffer(256)
    flags = ctypes.c_int(0)
    length = pdfium_c.FPDFText_GetFontInfo(raw, index, buffer, 256, flags)
    name = buffer.raw[: max(0, length - 1)].decode("utf-8", "replace").lower() if length else ""
    weight = pdfium_c.FPDFText_GetFontWeight(raw, index)
    bold = weight >= tuning.FONT_BOLD_WEIGHT or any(part in name for part in _BOLD_NAMES)
    italic = bool(flags.value & _ITALIC_FLAG) or any(part in name for part in _ITALIC_NAMES)
    mono = bool(flags.value & _FIXED_PITCH_FLAG) or any(part in name for part in _MONO_NAMES)
    invisible = bool(obj) and pdfium_c.FPDFTextObj_GetTextRenderMode(obj) == pdfium_c.FPDF_TEXTRENDERMODE_INVISIBLE
    math = is_math_font(name)
    return (bold, italic, mono, math, alphabet_of(name) if math else ""), invisible


def _links(pdf: pdfium.PdfDocument, page: pdfium.PdfPage, transform: _Transform) -> list[tuple[Box, str]]:
    links: list[tuple[Box, str]] = []
    position = ctypes.c_int(0)
    link = pdfium_c.FPDF_LINK()
    rect = pdfium_c.FS_RECTF()
    while pdfium_c.FPDFLink_Enumerate(page.raw, position, link):
        action = pdfium_c.FPDFLink_GetAction(link)
        if not action or pdfium_c.FPDFAction_GetType(action) != pdfium_c.PDFACTION_URI:
            continue
        size = pdfium_c.FPDFAction_GetURIPath(pdf.raw, action, None, 0)
        if size <= 1 or size > 65536:
            continue
        buffer = ctypes.create_string_buffer(size)
        pdfium_c.FPDFAction_GetURIPath(pdf.raw, action, buffer, size)
        uri = buffer.raw[: size - 1].decode("latin-1")
        if pdfium_c.FPDFLink_GetAnnotRect(link, rect):
            links.append((transform.box(rect.left, rect.bottom, rect.right, rect.top), uri))
    return links


def _link_at(links: list[tuple[Box, str]], box: Box) -> str:
    for area, uri in links:
        if area.contains_point(box.cx, box.cy, pad=1.0):
            return uri
    return ""


def _graphics(page: pdfium.PdfPage, transform: _Transform, images: list[Box],
              shapes: list[Shape]) -> tuple[list[Segment], float]:
    """Straight ruling lines (strokes, hairline fills, rectangle edges) and the share of the page under images
    (whose boxes go into `images`; bars and polylines a chart may be drawn with into `shapes`)."""
    rules: list[Segment] = []
    image_area = 0.0
    page_area = max(1.0, transform.width * transform.height)
    left, bottom, right, top = ctypes.c_float(), ctypes.c_float(), ctypes.c_float(), ctypes.c_float()
    stack = [(page.raw, False)]
    while stack:
        parent, is_form = stack.pop()
        count = pdfium_c.FPDFFormObj_CountObjects(parent) if is_form else pdfium_c.FPDFPage_CountObjects(parent)
        for index in range(max(0, count)):
            obj = pdfium_c.FPDFFormObj_GetObject(parent, index) if is_form else pdfium_c.FPDFPage_GetObject(parent,
                                                                                                            index)
            kind = pdfium_c.FPDFPageObj_GetType(obj)
            if kind == pdfium_c.FPDF_PAGEOBJ_FORM and len(stack) < 8:
                stack.append((obj, True))
                continue
            if kind not in (pdfium_c.FPDF_PAGEOBJ_PATH, pdfium_c.FPDF_PAGEOBJ_IMAGE):
                continue
            if not pdfium_c.FPDFPageObj_GetBounds(obj, left, bottom, right, top):
                continue
            box = transform.box(left.value, bottom.value, right.value, top.value)
            if kind == pdfium_c.FPDF_PAGEOBJ_IMAGE:
                image_area += max(0.0, box.width) * max(0.0, box.height)
                images.append(box)
                continue
            if box.width * box.height > 0.5 * page_area:
                continue  # a page background, not a rule
            if (shape := shape_of(obj, box, transform.point)) is not None:
                shapes.append(shape)
            if box.height <= tuning.RULE_MAX_THICKNESS and box.width > tuning.RULE_MIN_LENGTH:
                rules.append(Segment(box.x0, box.cy, box.x1, box.cy))
            elif box.width <= tuning.RULE_MAX_THICKNESS and box.height > tuning.RULE_MIN_LENGTH:
                rules.append(Segment(box.cx, box.y0, box.cx, box.y1))
            elif box.width > 2 and box.height > 2 and _is_rectangle(obj):
                rules.extend([Segment(box.x0, box.y0, box.x1, box.y0), Segment(box.x0, box.y1, box.x1, box.y1),
                              Segment(box.x0, box.y0, box.x0, box.y1), Segment(box.x1, box.y0, box.x1, box.y1)])
    return rules, min(1.0, image_area / page_area)


def _is_rectangle(obj: object) -> bool:
    """A path of one closed four-sided figure (cell shading, boxed cells) rather than a curve or a glyph."""
    count = pdfium_c.FPDFPath_CountSegments(obj)
    if count < 4 or count > 6:
        return False
    fill_mode, stroke = ctypes.c_int(0), ctypes.c_int(0)
    if not pdfium_c.FPDFPath_GetDrawMode(obj, fill_mode, stroke) or not stroke.value:
        return False  # a filled band (row shading) is no border: its edges do not separate cells
    for index in range(count):
        segment = pdfium_c.FPDFPath_GetPathSegment(obj, index)
        if pdfium_c.FPDFPathSegment_GetType(segment) == pdfium_c.FPDF_SEGMENT_BEZIERTO:
            return False
    return True


def _lines(chars: list[_Char]) -> list[Line]:
    """Characters to lines: runs in content order along one baseline, then runs joined across small gaps."""
    runs: list[list[_Char]] = []
    for char in chars:
        if runs and _continues(runs[-1][-1], char):
            runs[-1].append(char)
        else:
            runs.append([char])
    runs.sort(key=lambda run: min(c.box.cy for c in run))
    rows: list[tuple[Box, list[list[_Char]]]] = []
    for run in runs:
        box = _run_box(run)
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
        spans.append((band, [_run_box(run) for run in members]))
    merged: list[list[_Char]] = []
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


def _rotated_lines(chars: list[_Char]) -> list[Line]:
    """Rotated or slanted text (margin stamps, slanted column heads): one line per run of touching characters in
    content order, words split where the content has spaces (their boxes do not read left to right)."""
    runs: list[list[_Char]] = []
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
        words: list[list[_Char]] = []
        for char in run:
            if words and not char.space_before:
                words[-1].append(char)
            else:
                words.append([char])
        lines.append(Line([_make_word(word) for word in words], _run_box(run)))
    return lines


def _continues(previous: _Char, char: _Char) -> bool:
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


def _run_box(run: list[_Char]) -> Box:
    boxes = [c.box for c in run]
    return Box(min([b.x0 for b in boxes]), min([b.y0 for b in boxes]), max([b.x1 for b in boxes]),
               max([b.y1 for b in boxes]))


def _make_line(run: list[_Char]) -> Line | None:
    spaced_orders = {c.order for c in run if c.space_before}
    run = sorted(run, key=lambda c: c.box.cx)
    words: list[list[_Char]] = []
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
            if not ((spaced and gap > tuning.SPACE_MIN_GAP * size) or gap > 0.5 * size
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
    return Line(built, _run_box(run), rtl=rtl)


@functools.lru_cache(maxsize=4096)
def _strong_direction(text: str) -> int:
    kind = unicodedata.bidirectional(text[:1]) if text else ""
    return -1 if kind in ("R", "AL") else 1 if kind == "L" else 0


def _make_word(chars: list[_Char]) -> Word:
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
    return Word("".join(c.text for c in chars), _run_box(chars), sizes[len(sizes) // 2], bold, italic, mono,
                links[0] if links else "", math)
