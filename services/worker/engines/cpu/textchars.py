"""A PDF page's characters through pdfium, in content order: the text, box, style, font size and link of each.

Loose accents are put back on their letters and dot leaders dropped before the characters become lines
(textlines.py); `Transform` maps PDF user space to the display space every box of the text layer is in.
"""

from __future__ import annotations

import ctypes
import math
import unicodedata
from dataclasses import dataclass

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from services.worker.engines.cpu import tuning
from services.worker.engines.cpu.mathtext import alphabet_of, is_math_font
from services.worker.engines.cpu.model import Box, PageText

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


@dataclass(slots=True)
class Char:
    """A character of the text layer: its text, its box in display space (see `Transform`) and its style."""

    text: str
    box: Box
    size: float
    style: tuple[bool, bool, bool, bool, str]  # bold, italic, mono, math font, math alphabet
    space_before: bool  # a space separates this character from the one before it in content order
    order: int = 0  # position in content order
    link: str = ""
    points: float = 0.0  # font size in points (0 when unknown)


class Transform:
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


def attach_accents(chars: list[Char]) -> list[Char]:
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


def drop_leaders(chars: list[Char]) -> list[Char]:
    """Dot leaders (". . . . ." from a label to its figure, or a dotted rule) carry no text, and a leader drawn
    under its label would interleave with the label's letters: runs of four or more leader dots in content order
    are dropped, leaving a gap."""
    out: list[Char] = []
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
_SKIP, _SPACE = "", " "  # what a code point is to `read_chars` when it is not a character of a word


def _code_kind(code: int) -> str:
    """A code point (after the hyphen mark is mapped) as `read_chars` takes it: skipped, a space, or its text."""
    if code in (0, 0xFFFE, 0xFFFF) or code > 0x10FFFF:
        return _SKIP
    text = chr(code)
    if text.isspace() or code in (0x00A0, 0x200B) or unicodedata.category(text) == "Cc":
        return _SPACE
    return text


def read_chars(textpage: pdfium.PdfTextPage, transform: Transform, links: list[tuple[Box, str]],
               result: PageText) -> tuple[list[Char], list[Char]]:
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
    chars: list[Char] = []
    rotated: list[Char] = []
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
        char = Char(_normalize_char(kind), box, (box.y1 - box.y0) if upright else (box.x1 - box.x0), entry[0],
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


def _link_at(links: list[tuple[Box, str]], box: Box) -> str:
    for area, uri in links:
        if area.contains_point(box.cx, box.cy, pad=1.0):
            return uri
    return ""
