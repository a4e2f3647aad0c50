"""A page's inputs for an engine: its PNG at the engine's size, its text layer, the cpu engine's reading."""

from __future__ import annotations

from dataclasses import replace

from services.core.pdf import load_image, pdf_text_layer, png_up_filtered, render_pdf_page
from services.core.settings import EngineKind, Settings
from services.worker.engines import load_engine
from services.worker.engines.base import DEFAULT_RENDER_SIDE, Engine, PageInput, PageOutput, is_generative

# zlib level of the PNG a model gets: on the 24 digital dev pages of `make bench-gpu-path` at 1288 px, level 1
# took 22 ms of CPU a page against 36 ms at Pillow's default 6, and its files were 15 % smaller (229 against 270
# KiB); the pixels, so what the model sees, are the same (docs/benchmarks.md, the GPU path). Written with one
# filter for every row (`png_up_filtered`): about half Pillow's time at level 1, files ~5 % larger.
MODEL_PNG_LEVEL = 1


def render_side(engine: Engine, settings: Settings) -> int:
    if settings.engine.render_longest_side:
        return settings.engine.render_longest_side
    return engine.render_longest_side if is_generative(engine) else DEFAULT_RENDER_SIDE


def render_png(page: PageInput, longest_side: int, settings: Settings) -> bytes:
    """The page as PNG pixels: PDFs rendered at `longest_side`, images turned and shrunk to it."""
    if page.is_pdf:
        return png_up_filtered(render_pdf_page(page.data, longest_side=longest_side,
                                               max_pixels=settings.limits.max_render_pixels,
                                               max_side_pt=settings.limits.max_page_side_pt, rotation=page.rotation),
                               compress_level=MODEL_PNG_LEVEL)
    image = load_image(page.data)
    if page.rotation % 360:
        image = image.rotate(-(page.rotation % 360), expand=True)
    if max(image.size) > longest_side:
        scale = longest_side / max(image.size)
        image = image.resize((max(1, round(image.width * scale)), max(1, round(image.height * scale))))
    return png_up_filtered(image, compress_level=MODEL_PNG_LEVEL)


def prepare_input(engine: Engine, page: PageInput, settings: Settings) -> PageInput:
    """Fills in the text layer and pixels the engine asked for, and nothing it did not."""
    text_layer = page.text_layer
    image = page.image
    if engine.needs_text_layer and text_layer is None and page.is_pdf:
        text_layer = pdf_text_layer(page.data)
    if engine.needs_image and image is None:
        image = render_png(page, render_side(engine, settings), settings)
    if text_layer is page.text_layer and image is page.image:
        return page
    return replace(page, text_layer=text_layer, image=image)


class CpuHypothesis:
    """The cpu engine's reading of the page, made at most once: the anchor of a scanned page and the fallback."""

    def __init__(self, page: PageInput, settings: Settings) -> None:
        self.page, self.settings = page, settings
        self._output: PageOutput | None = None

    def reading_made(self, output: PageOutput) -> None:
        """The reading, made elsewhere (a preparer's pool process) from the same page and settings."""
        self._output = output

    def output(self) -> PageOutput:
        if self._output is None:
            cpu = load_engine(EngineKind.CPU.value, self.settings)
            self._output = cpu.parse(prepare_input(cpu, replace(self.page, anchor=None, image=None), self.settings))
        return self._output
