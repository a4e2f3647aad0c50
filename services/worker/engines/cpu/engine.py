"""The embedded engine: the PDF's text layer laid out when it is trustworthy, RapidOCR on the pixels otherwise."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from PIL import Image

from services.core.elements import BBox, Element, page_markdown
from services.core.pdf import load_image, render_pdf_page
from services.core.settings import Settings
from services.worker.engines import geometry
from services.worker.engines.base import PageInput, PageOutput
from services.worker.engines.cpu import charts, confidence, elements, layout, ocr, routes, tables, textlayer, tuning
from services.worker.engines.cpu.legibility import legibility_signals, scan_density
from services.worker.engines.cpu.model import Block, BlockKind, Line, PageText, Segment

# A text layer with fewer characters than this over a page that is mostly picture is a scan with a stray label.
_MIN_TEXT_CHARS = 20
# Text-layer and OCR readings of a scan with an invisible OCR layer must agree this well to keep the layer.
_AGREEMENT_TO_KEEP_LAYER = 0.85


def ocr_longest_side(settings: Settings) -> int:
    """The size a page without a usable text layer is rendered at for OCR: letter height at `ocr_dpi`, capped
    where recognition stops gaining."""
    return min(tuning.OCR_MAX_RENDER_SIDE, int(tuning.OCR_RENDER_INCHES * settings.engine.ocr_dpi))


def lay_out(lines: list[Line], width: float, height: float, *, rules: list[Segment] | None = None,
            margin_lines: list[Line] | None = None, from_ocr: bool = False,
            content_lines: list[Line] | None = None) -> list[Block]:
    """Lines of a page to classified blocks in reading order (furniture included, marked). Blocks made only of
    `content_lines` are never furniture (text OCR read inside a picture: a cover's title is no running head)."""
    if not lines:
        return []
    lines = layout.attach_bullets(lines)
    size = layout.body_size(lines)
    # Rotated text in the side margins (download stamps, arXiv ids) is furniture; elsewhere it is content, and
    # its words may be a table's slanted column heads, so each word is offered to the table finder on its own.
    margin_lines = margin_lines or []
    inside = [line for line in margin_lines if not (line.box.x1 < tuning.MARGIN_SHARE_LEFT * width
                                                              or line.box.x0 > tuning.MARGIN_SHARE_RIGHT * width)]
    slanted = {id(word): line for line in inside for word in line.words}
    offered = [Line([word], word.box) for line in inside for word in line.words]
    found, rest = tables.find_tables(lines + offered, rules or [], width, size)
    taken = {id(word) for block in found for line in block.lines for word in line.words if id(word) in slanted}
    rest = [line for line in rest if not (len(line.words) == 1 and id(line.words[0]) in slanted)]
    blocks = layout.group_blocks(rest, size) + found
    for line in margin_lines:
        if line in inside:
            kept = [word for word in line.words if id(word) not in taken]
            if kept:
                blocks.append(Block([Line(kept, line.box)], line.box, BlockKind.PARAGRAPH))
        else:
            blocks.append(Block([line], line.box, BlockKind.FURNITURE))
    layout.mark_furniture(blocks, width, height, size)
    keep = {id(line) for line in content_lines or []}
    for block in blocks:
        if block.kind == BlockKind.FURNITURE and keep and all(id(line) in keep for line in block.lines):
            block.kind = BlockKind.PARAGRAPH
    content = [b for b in blocks if b.kind != BlockKind.FURNITURE]
    furniture = [b for b in blocks if b.kind == BlockKind.FURNITURE]
    ordered = layout.reading_order(content)
    classified = layout.classify(ordered, size * (1.0 if not from_ocr else tuning.OCR_BODY_SIZE_FACTOR))
    return classified + furniture


class CpuEngine:
    name = "cpu"
    needs_text_layer = False  # reads the text layer itself, only for PDFs
    needs_image = False  # renders only pages without a usable text layer
    generative = False

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def parse(self, page: PageInput, *, temperature: float = 0.0) -> PageOutput:
        if not page.is_pdf:
            image = load_image(page.image or page.data)
            size = float(image.width), float(image.height)  # an image's page is its pixels, 1 px = 1 pt
            if page.rotation:
                image = image.rotate(-page.rotation, expand=True)
            scanned = self._ocr_page(image, page, size)
            return routes.settle(scanned, _ocr_held(scanned), _ink_if_empty(scanned, lambda: image),
                                 page.rotation + scanned.rotation)
        text = textlayer.read_page(page.data)
        text_output = self._text_layer_page(text, page)
        signals = text_output.signals
        layer_text = "\n".join(line.text for line in [*text.lines, *text.margin_lines])
        verdict = _text_layer_verdict(text, signals)
        if verdict == "use":
            held = routes.Held(layer_words=routes.plausible_words(layer_text))
            if _picture_page(text):
                text_output, scanned_held = self._with_picture_text(text, page, text_output)
                held = routes.Held(held.layer_words, scanned_held.ocr_words, scanned_held.ocr_boxes)
            return routes.settle(text_output, held, _ink_if_empty(text_output, lambda: self._render(page)),
                                 runs=_runs(text))
        image = self._render(page)
        scanned = self._ocr_page(image, page, (text.width, text.height), _upsampled(image, text, page.data))
        if verdict == "verify":
            agreement = confidence.agreement(text_output.markdown, scanned.markdown)
            scanned.signals["text_layer_agreement"] = round(agreement, 4)
            if agreement >= _AGREEMENT_TO_KEEP_LAYER:
                signals["text_layer_agreement"] = round(agreement, 4)
                text_output.confidence = confidence.text_layer_confidence(signals)
                return routes.settle(text_output, _ocr_held(scanned), None, runs=_runs(text))
        layer_words = routes.plausible_words(layer_text)
        ocr_words = routes.output_words(scanned.markdown)
        if layer_words and ocr_words < tuning.LAYER_OVER_OCR_SHARE * layer_words:
            # OCR found far less than the layer holds: the layer, though doubtful, is the better reading.
            text_output.signals.update({"ocr_words": float(ocr_words), "ocr_mean_score":
                                        scanned.signals.get("ocr_mean_score", 0.0)})
            text_output.details["route"] = "text_layer_over_ocr"
            text_output.confidence = min(text_output.confidence or 0.0, tuning.LAYER_OVER_OCR_CONFIDENCE)
            held = routes.Held(layer_words=layer_words, ocr_words=ocr_words)
            return routes.settle(text_output, held, None, runs=_runs(text))
        scanned.signals.update({f"rejected_{k}": v for k, v in signals.items() if k.startswith("text_layer")})
        return routes.settle(scanned, _ocr_held(scanned), _ink_if_empty(scanned, lambda: image),
                             page.rotation + scanned.rotation)

    def _text_layer_page(self, text: PageText, page: PageInput, pictured: list[Line] | None = None) -> PageOutput:
        found = charts.find_charts(text) if text.shapes else []
        flow = charts.without_charts(text, found) if found else text
        blocks = lay_out(flow.lines, text.width, text.height, rules=flow.rules, margin_lines=text.margin_lines,
                         content_lines=pictured)
        tree = elements.to_elements(blocks, page=page.index + 1, height=text.height,
                                    body_size=layout.body_size(text.lines), images=text.images, width=text.width,
                                    charts=found)
        # Judged on the words themselves, not on Markdown syntax or escaped link targets.
        signals = confidence.text_layer_signals(text, "\n".join(line.text for line in text.lines))
        return PageOutput(markdown=_markdown(tree), engine=self.name, model="text-layer",
                          confidence=confidence.text_layer_confidence(signals), signals=signals,
                          details={"source": "text_layer"}, width=text.width, height=text.height,
                          elements=tree, words=elements.page_words(blocks))

    def _with_picture_text(self, text: PageText, page: PageInput,
                           text_output: PageOutput) -> tuple[PageOutput, routes.Held]:
        """A digital page that is mostly picture: OCR reads the text drawn in its pictures (a cover's title, a
        logo), and the lines no text-layer line covers join the layer's lines."""
        image = self._render(page)
        scanned = ocr.read_image(np.asarray(image.convert("RGB")), try_turns=False)
        to_page = geometry.pixel_map(scanned.width, scanned.height, page.rotation + scanned.rotation,
                                     text.width, text.height)
        scale = text.width / max(1, image.width)
        added = routes.picture_lines(scanned.lines, [*text.lines, *text.margin_lines], text.images, to_page, scale)
        held = routes.Held(ocr_words=sum(len(line.words) for line in scanned.lines), ocr_boxes=scanned.boxes_found)
        if not added:
            return text_output, held
        merged = PageText(width=text.width, height=text.height, lines=[*text.lines, *added], rules=text.rules,
                          margin_lines=text.margin_lines, chars=text.chars, images=text.images,
                          image_coverage=text.image_coverage, shapes=text.shapes)
        output = self._text_layer_page(merged, page, pictured=added)
        output.signals = {**text_output.signals, "picture_ocr_lines": float(len(added))}
        output.confidence = text_output.confidence
        output.details["route"] = "text_layer_and_picture_ocr"
        return output, held

    def _render(self, page: PageInput) -> Image.Image:
        return render_pdf_page(page.data, longest_side=ocr_longest_side(self.settings), rotation=page.rotation,
                               max_pixels=self.settings.limits.max_render_pixels,
                               max_side_pt=self.settings.limits.max_page_side_pt)

    def _ocr_page(self, image: Image.Image, page: PageInput, size: tuple[float, float],
                  upsampled: float = 1.0) -> PageOutput:
        """OCR of the page's pixels; boxes are turned back and scaled to the page's `size` in points.
        `upsampled`: rendered pixels per pixel of the scan the page shows (see `legibility_signals`)."""
        scanned = ocr.read_image(np.asarray(image.convert("RGB")), rescale_lines=self.settings.engine.ocr_rescale_lines)
        blocks = lay_out(scanned.lines, float(scanned.width), float(scanned.height), from_ocr=True)
        to_page = geometry.pixel_map(scanned.width, scanned.height, page.rotation + scanned.rotation, *size)
        tree = elements.to_elements(blocks, page=page.index + 1, height=float(scanned.height),
                                    body_size=layout.body_size(scanned.lines), to_page=to_page)
        signals = confidence.ocr_signals(scanned.scores, [line.text for line in scanned.lines], scanned.boxes_found,
                                       scanned.skew, (scanned.rescale_agreement, scanned.rescale_lines))
        signals["ocr_turns_tried"] = float(scanned.turns_tried)
        signals.update(legibility_signals(np.asarray(image.convert("L")), scanned.lines, upsampled))
        return PageOutput(markdown=_markdown(tree), engine=self.name, model="rapidocr-ppocrv6",
                          confidence=confidence.ocr_confidence(signals), signals=signals,
                          rotation=scanned.rotation, width_px=scanned.width, height_px=scanned.height,
                          details={"source": "ocr"}, width=size[0], height=size[1], elements=tree,
                          words=elements.page_words(blocks, to_page))

    def check_health(self) -> None:
        return None


def _markdown(tree: list[Element]) -> str:
    body = page_markdown(tree)
    return body + "\n" if body else ""


def _runs(text: PageText) -> list[tuple[str, BBox]]:
    """The text layer's runs in content order, boxed in page points (what `routes.settle` reads tables' order by)."""
    return [(run, geometry.identity(box)) for run, box in text.runs]


def _ocr_held(scanned: PageOutput) -> routes.Held:
    return routes.Held(ocr_words=routes.output_words(scanned.markdown),
                       ocr_boxes=int(scanned.signals.get("ocr_boxes", 0)))


def _ink_if_empty(output: PageOutput, image: Callable[[], Image.Image]) -> float | None:
    """The page's ink share, measured (rendering a digital page) only when the output has no word."""
    return routes.ink_share(image()) if routes.written_words(output) == 0 else None


def _upsampled(image: Image.Image, text: PageText, pdf: bytes) -> float:
    """Rendered pixels per pixel of the page's largest image (1 when it has none or is finer than the render)."""
    if not text.images:
        return 1.0
    density = scan_density(pdf)
    rendered = max(image.width, image.height) / max(1.0, text.width, text.height)
    return max(1.0, rendered / density) if density else 1.0


def _picture_page(text: PageText) -> bool:
    """Mostly picture with little text: the pictures may hold text of their own."""
    return (text.image_coverage > tuning.PICTURE_PAGE_COVERAGE and text.chars < tuning.PICTURE_PAGE_MAX_CHARS
            and bool(text.images))


def _text_layer_verdict(text: PageText, signals: dict[str, float]) -> str:
    """`use` the text layer, `verify` it against OCR (an invisible layer over a scan), or `ocr` the page."""
    if text.chars < _MIN_TEXT_CHARS:
        return "ocr" if text.chars == 0 or text.image_coverage > tuning.SPARSE_LAYER_IMAGE_COVERAGE else "use"
    if (signals["text_layer_unmapped"] > tuning.LAYER_MAX_UNMAPPED
            or signals["text_layer_quality"] < tuning.LAYER_MIN_QUALITY):
        return "ocr"
    if signals["text_layer_word_shape"] < tuning.LAYER_MIN_WORD_SHAPE:
        return "ocr"
    if (signals["text_layer_invisible"] > tuning.LAYER_VERIFY_INVISIBLE
            and text.image_coverage > tuning.LAYER_VERIFY_IMAGE_COVERAGE):
        return "verify"
    return "use"
