"""The embedded engine: the PDF's text layer laid out when it is trustworthy, RapidOCR on the pixels otherwise."""

from __future__ import annotations

import numpy as np
from PIL import Image

from services.core.elements import Element, page_markdown
from services.core.pdf import load_image, render_pdf_page
from services.core.settings import Settings
from services.worker.engines.base import PageInput, PageOutput
from services.worker.engines.cpu import confidence, elements, layout, ocr, tables, textlayer, tuning
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
            margin_lines: list[Line] | None = None, from_ocr: bool = False) -> list[Block]:
    """Lines of a page to classified blocks in reading order (furniture included, marked)."""
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
    content = [b for b in blocks if b.kind != BlockKind.FURNITURE]
    furniture = [b for b in blocks if b.kind == BlockKind.FURNITURE]
    ordered = layout.reading_order(content)
    classified = layout.classify(ordered, size * (1.0 if not from_ocr else tuning.OCR_BODY_SIZE_FACTOR))
    return classified + furniture


class CpuEngine:
    name = "cpu"
    needs_text_layer = False  # reads the text layer itself, only for PDFs
    needs_image = False  # renders only pages without a usable text layer

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def parse(self, page: PageInput, *, temperature: float = 0.0) -> PageOutput:
        if not page.is_pdf:
            image = load_image(page.image or page.data)
            size = float(image.width), float(image.height)  # an image's page is its pixels, 1 px = 1 pt
            if page.rotation:
                image = image.rotate(-page.rotation, expand=True)
            return self._ocr_page(image, page, size)
        text = textlayer.read_page(page.data)
        blocks = lay_out(text.lines, text.width, text.height, rules=text.rules, margin_lines=text.margin_lines)
        tree = elements.to_elements(blocks, page=page.index + 1, height=text.height,
                                    body_size=layout.body_size(text.lines), images=text.images, width=text.width)
        body = _markdown(tree)
        # Judged on the words themselves, not on Markdown syntax or escaped link targets.
        signals = confidence.text_layer_signals(text, "\n".join(line.text for line in text.lines))
        verdict = _text_layer_verdict(text, signals)
        text_output = PageOutput(markdown=body, engine=self.name, model="text-layer",
                                 confidence=confidence.text_layer_confidence(signals), signals=signals,
                                 details={"source": "text_layer"}, width=text.width, height=text.height,
                                 elements=tree, words=elements.page_words(blocks))
        if verdict == "use":
            return text_output
        image = self._render(page)
        scanned = self._ocr_page(image, page, (text.width, text.height))
        if verdict == "verify":
            agreement = confidence.agreement(body, scanned.markdown)
            scanned.signals["text_layer_agreement"] = round(agreement, 4)
            if agreement >= _AGREEMENT_TO_KEEP_LAYER:
                signals["text_layer_agreement"] = round(agreement, 4)
                text_output.confidence = confidence.text_layer_confidence(signals)
                return text_output
        scanned.signals.update({f"rejected_{k}": v for k, v in signals.items() if k.startswith("text_layer")})
        return scanned

    def _render(self, page: PageInput) -> Image.Image:
        return render_pdf_page(page.data, longest_side=ocr_longest_side(self.settings), rotation=page.rotation,
                               max_pixels=self.settings.limits.max_render_pixels,
                               max_side_pt=self.settings.limits.max_page_side_pt)

    def _ocr_page(self, image: Image.Image, page: PageInput, size: tuple[float, float]) -> PageOutput:
        """OCR of the page's pixels; boxes are turned back and scaled to the page's `size` in points."""
        scanned = ocr.read_image(np.asarray(image.convert("RGB")))
        blocks = lay_out(scanned.lines, float(scanned.width), float(scanned.height), from_ocr=True)
        to_page = elements.pixel_map(scanned.width, scanned.height, page.rotation + scanned.rotation, *size)
        tree = elements.to_elements(blocks, page=page.index + 1, height=float(scanned.height),
                                    body_size=layout.body_size(scanned.lines), to_page=to_page)
        signals = confidence.ocr_signals(scanned.scores, [line.text for line in scanned.lines], scanned.boxes_found)
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
