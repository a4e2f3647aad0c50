"""The page model every cpu-engine stage shares: words, lines and blocks in top-left page coordinates."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from services.worker.engines.geometry import Box as Box
from services.worker.engines.geometry import union_all as union_all


@dataclass(slots=True)
class Word:
    """A run of characters without a space, with the style of its first character."""

    text: str
    box: Box
    size: float = 10.0  # font size in points (OCR: line height)
    bold: bool = False
    italic: bool = False
    mono: bool = False
    link: str = ""  # the target of the link annotation the word sits in
    math: tuple[str, str] | None = None  # (LaTeX, trailing punctuation) when the word is set in math fonts
    ink: Box | None = None  # OCR: the word's own pixels (`box` is the detector's padded line height)


@dataclass(slots=True)
class Line:
    """Words on one baseline, close enough together to be read as one run of text."""

    words: list[Word]
    box: Box
    rtl: bool = False
    score: float = 1.0  # OCR recognition score; 1 for the text layer

    @property
    def text(self) -> str:
        return " ".join(word.text for word in self.words)

    @property
    def size(self) -> float:
        sizes = sorted(word.size for word in self.words)
        return sizes[len(sizes) // 2]

    @property
    def bold(self) -> bool:
        letters = [len(w.text) for w in self.words if w.bold]
        return sum(letters) * 2 > sum(len(w.text) for w in self.words)


class BlockKind(StrEnum):
    PARAGRAPH = "paragraph"
    HEADING = "heading"
    LIST_ITEM = "list_item"
    TABLE = "table"
    CODE = "code"
    FURNITURE = "furniture"  # running header, footer, page number, margin stamp: dropped


@dataclass(slots=True)
class Block:
    lines: list[Line]
    box: Box
    kind: BlockKind = BlockKind.PARAGRAPH
    level: int = 0  # heading level, 1..6
    html: str = ""  # tables: the rendered <table>

    @property
    def size(self) -> float:
        sizes = sorted(line.size for line in self.lines)
        return sizes[len(sizes) // 2] if sizes else 0.0


@dataclass(slots=True)
class Segment:
    """A straight ruling line drawn on the page (table borders, underlines)."""

    x0: float
    y0: float
    x1: float
    y1: float

    @property
    def horizontal(self) -> bool:
        return abs(self.y1 - self.y0) <= abs(self.x1 - self.x0)


@dataclass(slots=True)
class Shape:
    """A drawn shape a chart may be made of: a filled rectangle (`bar`) or an open run of straight strokes
    (`line`, its `points` in order), with its fill or stroke colour."""

    kind: str  # "bar" | "line"
    box: Box
    color: tuple[int, int, int]
    points: list[tuple[float, float]] = field(default_factory=list)


@dataclass(slots=True)
class PageText:
    """What the text layer of one page holds, in display orientation (top-left origin, points)."""

    width: float
    height: float
    lines: list[Line] = field(default_factory=list)
    rules: list[Segment] = field(default_factory=list)
    margin_lines: list[Line] = field(default_factory=list)  # rotated text (side stamps), kept aside
    chars: int = 0
    unmapped_chars: int = 0  # glyphs with no Unicode mapping
    invisible_chars: int = 0  # render mode 3: an OCR layer laid over a scan
    image_coverage: float = 0.0  # share of the page covered by images
    images: list[Box] = field(default_factory=list)  # the images drawn on the page (figures, logos, a scan)
    shapes: list[Shape] = field(default_factory=list)  # bars and polylines (what vector charts are drawn with)
    runs: list[tuple[str, Box]] = field(default_factory=list)  # upright text in content order (`content_runs`)
