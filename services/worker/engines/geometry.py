"""Page geometry every engine and the pipeline share: a box, and maps from an engine's frame to page points.

The cpu engine lays pages out with `Box`; the vllm engine and the pipeline map model and OCR pixel boxes
back to the page with `pixel_map`. Nothing outside `engines/cpu` reaches into the cpu engine for these.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from services.core.elements import BBox


@dataclass(slots=True)
class Box:
    x0: float
    y0: float
    x1: float
    y1: float

    @property
    def width(self) -> float:
        return self.x1 - self.x0

    @property
    def height(self) -> float:
        return self.y1 - self.y0

    @property
    def cx(self) -> float:
        return (self.x0 + self.x1) / 2

    @property
    def cy(self) -> float:
        return (self.y0 + self.y1) / 2

    def union(self, other: Box) -> Box:
        return Box(min(self.x0, other.x0), min(self.y0, other.y0), max(self.x1, other.x1), max(self.y1, other.y1))

    def x_overlap(self, other: Box) -> float:
        return max(0.0, min(self.x1, other.x1) - max(self.x0, other.x0))

    def y_overlap(self, other: Box) -> float:
        return max(0.0, min(self.y1, other.y1) - max(self.y0, other.y0))

    def contains_point(self, x: float, y: float, pad: float = 0.0) -> bool:
        return self.x0 - pad <= x <= self.x1 + pad and self.y0 - pad <= y <= self.y1 + pad


def union_all(boxes: list[Box]) -> Box:
    box = boxes[0]
    for other in boxes[1:]:
        box = box.union(other)
    return box


def bbox_union(boxes: Sequence[BBox]) -> BBox:
    """The smallest page box holding every one of `boxes` (at least one)."""
    return (min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes))


# Maps a box in the engine's frame (text-layer points, or OCR pixels) to top-left page points.
BoxMap = Callable[[Box], BBox]


def identity(box: Box) -> BBox:
    return rounded((box.x0, box.y0, box.x1, box.y1))


def rounded(box: BBox) -> BBox:
    return (round(box[0], 2), round(box[1], 2), round(box[2], 2), round(box[3], 2))


def upright_map(turn: int, page_width: float, page_height: float) -> Callable[[BBox], BBox]:
    """Page-point boxes into the frame the page was read in, when it was turned `turn` degrees clockwise to read
    it (`pixel_map`'s turn): a quarter-turned scan's lines run across again, as its words' geometry assumes. It is
    `pixel_map` the other way: the page is the image, turned back by `turn`, onto the read frame at 1 pt a point."""
    turn %= 360
    read = (page_height, page_width) if turn in (90, 270) else (page_width, page_height)
    back = pixel_map(page_width, page_height, -turn, *read)
    return lambda box: back(Box(*box))


def pixel_map(image_width: float, image_height: float, rotation: int, page_width: float,
              page_height: float) -> BoxMap:
    """OCR pixel boxes on an image turned `rotation` degrees clockwise back to the page as displayed, in points.

    `image_width`/`image_height` are the size of the turned image the boxes were read on."""
    turn = rotation % 360
    # The size of the image before it was turned.
    width0, height0 = (image_height, image_width) if turn in (90, 270) else (image_width, image_height)
    scale_x, scale_y = page_width / max(1, width0), page_height / max(1, height0)

    def back(x: float, y: float) -> tuple[float, float]:
        if turn == 90:  # turned clockwise: the old top-left corner went to the top-right
            return y, height0 - x
        if turn == 180:
            return width0 - x, height0 - y
        if turn == 270:
            return width0 - y, x
        return x, y

    def to_page(box: Box) -> BBox:
        xa, ya = back(box.x0, box.y0)
        xb, yb = back(box.x1, box.y1)
        return rounded((min(xa, xb) * scale_x, min(ya, yb) * scale_y, max(xa, xb) * scale_x,
                         max(ya, yb) * scale_y))

    return to_page
