"""What happens to one page between fetching it and storing its result: inputs prepared, the engine run, timed."""

from __future__ import annotations

import time
from dataclasses import dataclass

from services.core.metrics import stage_timer
from services.core.pdf import pdf_text_layer, png_bytes, render_pdf_page
from services.core.settings import Settings
from services.worker.engines.base import Engine, PageInput, PageOutput


@dataclass(frozen=True, slots=True)
class PageOutcome:
    output: PageOutput
    attempts: int
    latency_ms: int
    is_fallback: bool = False
    fallback_reason: str = ""


def prepare_input(engine: Engine, page: PageInput, settings: Settings) -> PageInput:
    """Fills in the text layer and pixels the engine asked for, and nothing it did not."""
    text_layer = page.text_layer
    image = page.image
    if engine.needs_text_layer and text_layer is None and page.is_pdf:
        text_layer = pdf_text_layer(page.data)
    if engine.needs_image and image is None:
        if page.is_pdf:
            rendered = render_pdf_page(page.data, longest_side=settings.engine.render_longest_side,
                                       max_pixels=settings.limits.max_render_pixels,
                                       max_side_pt=settings.limits.max_page_side_pt, rotation=page.rotation)
            image = png_bytes(rendered)
        else:
            image = page.data
    if text_layer is page.text_layer and image is page.image:
        return page
    return PageInput(page.document_id, page.index, page.media_type, page.data, text_layer=text_layer,
                     image=image, rotation=page.rotation)


def run_page(engine: Engine, page: PageInput, settings: Settings) -> PageOutcome:
    started = time.perf_counter()
    with stage_timer("render", engine.name):
        prepared = prepare_input(engine, page, settings)
    with stage_timer("engine", engine.name):
        output = engine.parse(prepared)
    return PageOutcome(output=output, attempts=1, latency_ms=int((time.perf_counter() - started) * 1000))
