"""Each element's own confidence: where on the page the route's doubt sits.

The page's confidence (`confidence.py`, `routes.settle`) says how far the route that read it can be trusted. A block
gets that figure scaled by what is known of the block alone, so the blocks' character-weighted mean is the route's
confidence again and a reviewer is sent to the weak block, not the whole page:

- its *local* health (`local_health`): on the OCR route the character-weighted mean recognition score of its
  lines; on the text layer the share of plausible characters times (0.5 + 0.5 × the share of plausible word
  shapes) of its own text — the page-level signals of `confidence.py`, measured on the block;
- block = route confidence × local / (the page's character-weighted mean of local), capped at 1;
- a table (or a chart's derived data table) is then scaled by its own grid consistency
  (`confidence.table_consistency`), a short paragraph holding a figure by the loose-figure penalty when the page
  took it;
- a figure without text has nothing of its own to weigh: it gets the route's confidence.

Page-level findings about text that is *not* in any block (`text_dropped`, an empty inked page) lower the page,
not the blocks that were read. A table read from page columns (`pagecolumns.page_column_penalties`: a page gutter
through it, or column strips that break into sections at different heights) loses the gutter's and the section
breaks' weights in `routes.settle`, where the page loses them per unit of its share.
"""

from __future__ import annotations

from collections.abc import Sequence

from services.core.elements import Element, ElementType
from services.worker.engines.cpu import confidence
from services.worker.engines.cpu.model import Block


def local_health(blocks: Sequence[Block]) -> float:
    """What the lines of `blocks` say of themselves: OCR lines their recognition score (character-weighted),
    text-layer lines (score 1) the plausibility of their characters and word shapes."""
    lines = [line for block in blocks for line in block.lines]
    if not lines:
        return 1.0
    weights = [max(1, len(line.text)) for line in lines]
    score = sum(line.score * w for line, w in zip(lines, weights, strict=True)) / sum(weights)
    text = "\n".join(line.text for line in lines)
    quality = confidence.text_quality(text) * (0.5 + 0.5 * confidence.word_shape_quality(text)) if text.strip() \
        else 1.0
    return round(score * quality, 4)


def _weight(element: Element) -> int:
    return max(1, len(element.text))


def rate(elements: list[Element], route_confidence: float | None) -> list[Element]:
    """The elements with `confidence` set from their local health (what `to_elements` put there) and the route's
    confidence. Called once the route is settled, before page-level findings lower the page."""
    if route_confidence is None:
        return elements
    rated = [e for e in elements if e.confidence is not None]
    total = sum(_weight(e) for e in rated)
    mean = sum((e.confidence or 0.0) * _weight(e) for e in rated) / total if total else 0.0
    structure = confidence.structure_signals(elements)
    loose_penalty = confidence.structure_factor({k: v for k, v in structure.items() if k != "table_consistency"})
    out = []
    for element in elements:
        if element.confidence is None or mean <= 0:
            value = route_confidence
        else:
            value = min(1.0, route_confidence * element.confidence / mean)
        if element.html and (element.type == ElementType.TABLE or element.derived):
            value *= confidence.table_consistency(element.html)
        elif loose_penalty < 1.0 and _loose_figure(element):
            value *= loose_penalty
        out.append(element.model_copy(update={"confidence": round(max(0.0, value), 4)}))
    return out


def _loose_figure(element: Element) -> bool:
    """A short block holding a figure: what `structure_signals` counts as a table cell read as prose."""
    return confidence.structure_signals([element])["loose_figure_lines"] > 0


def weighted_mean(elements: Sequence[Element]) -> float | None:
    """The character-weighted mean of the elements' confidences (None when none has one)."""
    rated = [e for e in elements if e.confidence is not None]
    if not rated:
        return None
    return sum((e.confidence or 0.0) * _weight(e) for e in rated) / sum(_weight(e) for e in rated)
