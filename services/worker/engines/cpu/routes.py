"""Checking what the engine wrote against what the page holds, so no page comes back silently empty.

The page holds text when its text layer has plausible words or OCR detected text boxes on it. When the output
keeps little of that, the page is flagged `text_dropped` with a low confidence; when the page holds nothing and
its pixels are (nearly) one colour, it is a blank page, confidently empty.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from PIL import Image

from services.core.elements import FURNITURE, BBox
from services.worker.engines.base import PageOutput
from services.worker.engines.cpu import beside, blockconf, confidence, pagecolumns, tuning
from services.worker.engines.cpu.model import Box, Line, Word
from services.worker.engines.geometry import BoxMap, upright_map

TEXT_DROPPED = "text_dropped"
_WORD = re.compile(r"\w+", re.UNICODE)
_TAG = re.compile(r"<[^>]+>")


@dataclass(frozen=True, slots=True)
class Held:
    """What the page holds, as read by the routes that looked at it."""

    layer_words: int = 0  # plausible words of the text layer (0 when it was not read or is garbage)
    ocr_words: int = 0  # words OCR recognised
    ocr_boxes: int = 0  # text boxes OCR detected (read or not)

    @property
    def words(self) -> int:
        return max(self.layer_words, self.ocr_words)


def output_words(markdown: str) -> int:
    return len(_WORD.findall(_TAG.sub(" ", markdown)))


def written_words(output: PageOutput) -> int:
    """Words the engine wrote: in its Markdown, or in its element tree, which also keeps the running heads and
    feet the Markdown leaves out on purpose. A head or foot longer than one can be (`tuning.FURNITURE_MAX_CHARS`) is
    the page's text sent out of the Markdown by mistake, and is not counted: a page of glpk's manual whose one
    paragraph went to `page_header` came back with an empty Markdown and full coverage."""
    in_tree = sum(output_words(element.text) for element in output.elements
                  if element.type not in FURNITURE or len(element.text) <= tuning.FURNITURE_MAX_CHARS)
    return max(output_words(output.markdown), in_tree)


def plausible_words(text: str) -> int:
    """Words of a reading that look like words (the text layer's share of plausible shapes, counted)."""
    words = _WORD.findall(text)
    return round(len(words) * confidence.word_shape_quality(text)) if words else 0


def ink_share(image: Image.Image) -> float:
    """Share of the page's pixels that differ clearly from its background (the median grey)."""
    grey = np.asarray(image.convert("L").resize((max(1, image.width // 4), max(1, image.height // 4))),
                      dtype=np.int16)
    if grey.size == 0:
        return 0.0
    background = int(np.median(grey))
    return float(np.mean(np.abs(grey - background) > tuning.INK_LEVEL))


def settle(output: PageOutput, held: Held, ink: float | None, turn: int = 0,
           runs: Sequence[tuple[str, BBox]] = ()) -> PageOutput:
    """Flags a page whose output lost the text the page holds, and tells a blank page from an empty one.

    `ink` is the page's ink share, measured only when the output is empty (None: not measured). The page's
    structure (table grids, figures read as prose) weighs on its confidence here too, its tables' words seen as the
    page was read: `turn` degrees clockwise (an OCR page turned to be read; `geometry.pixel_map`'s turn); `runs`, a
    text-layer page's runs in content order (`PageText.runs`), tell its tables' order (`table_order_disorder`)."""
    output.elements = blockconf.rate(output.elements, output.confidence)  # the route's confidence, block by block
    upright = upright_map(turn, output.width, output.height) if turn % 360 else None
    tables = pagecolumns.table_readings(output.elements, output.words, upright, runs)
    besides = beside.beside_readings(output.elements, output.words, runs)
    # a page without a producer's order (read by OCR) is asked by its blocks' shape instead
    entries = beside.entry_readings(output.elements, output.words, upright) if not runs else None
    structure = (confidence.structure_signals(output.elements, tables) | besides.signals()
                 | (entries.signals() if entries else {}))
    output.signals.update(structure)
    taken = pagecolumns.page_column_penalties(tables)
    for element_id, weight in [*besides.penalties().items(), *(entries.penalties().items() if entries else ())]:
        taken[element_id] = taken.get(element_id, 0.0) + weight
    output.elements = [e.model_copy(update={"confidence": round(max(0.0, e.confidence - taken[e.id]), 4)})
                       if e.id in taken and e.confidence is not None else e for e in output.elements]
    prose = confidence.table_prose_penalty(structure)
    if prose:
        output.signals["table_prose_penalty"] = round(prose, 4)  # kept so that a refit can add it back
    settled = max(0.0, (output.confidence or 0.0) * confidence.structure_factor(structure) - prose)
    for name, penalty in (("table_gutter_penalty", pagecolumns.table_gutter_penalty(structure)),
                          ("table_flow_penalty", pagecolumns.table_flow_penalty(structure)),
                          ("table_order_penalty", pagecolumns.table_order_penalty(structure)),
                          ("beside_order_penalty", beside.beside_order_penalty(structure)),
                          ("beside_entries_penalty", beside.beside_entries_penalty(structure))):
        taken_off = min(settled, penalty)  # in this order, each at most what the ones before left
        if taken_off:
            output.signals[name] = round(taken_off, 4)  # what was taken off, for a refit to add back
        settled -= taken_off
    output.confidence = round(settled, 4)
    written = written_words(output)
    output.signals["output_words"] = float(written)
    output.signals["held_words"] = float(held.words)
    coverage = min(1.0, written / held.words) if held.words else (1.0 if written else 0.0)
    output.signals["coverage"] = round(coverage, 4)
    if written == 0 and held.words == 0 and held.ocr_boxes == 0:
        blank = ink is not None and ink < tuning.BLANK_MAX_INK
        output.signals["blank"] = 1.0 if blank else 0.0
        if ink is not None:
            output.signals["ink_share"] = round(ink, 5)
        if not blank:
            # Ink but no text found: a picture without words, or text no route could see.
            output.confidence = min(output.confidence or 0.0, tuning.EMPTY_INKED_CONFIDENCE)
        return output
    dropped = (held.words or held.ocr_boxes) and (
        written == 0 or (held.words >= tuning.DROP_MIN_HELD_WORDS and coverage < tuning.DROP_MAX_COVERAGE))
    if dropped:
        output.warnings.append(TEXT_DROPPED)
        output.confidence = round(min(output.confidence or 0.0, tuning.DROPPED_CONFIDENCE * coverage
                                      + tuning.DROPPED_CONFIDENCE_FLOOR), 4)
    return output


def picture_lines(lines: list[Line], taken: list[Line], pictures: list[Box], to_page: BoxMap,
                  scale: float) -> list[Line]:
    """OCR lines (pixels) that sit inside a picture of a digital page and on no text-layer line: text drawn as
    pixels (a logo, a cover's title), in page points."""
    found: list[Line] = []
    for line in lines:
        x0, y0, x1, y1 = to_page(line.box)
        box = Box(x0, y0, x1, y1)
        if not any(p.contains_point(box.cx, box.cy) for p in pictures):
            continue
        if any(t.box.x_overlap(box) > 0 and t.box.y_overlap(box) > 0.5 * min(t.box.height, box.height)
               for t in taken):
            continue
        words = [Word(w.text, Box(*to_page(w.box)), size=w.size * scale, ink=Box(*to_page(w.ink)) if w.ink else None)
                 for w in line.words]
        found.append(Line(words, box, score=line.score))
    return found
