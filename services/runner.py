"""Parsing files in this process, without Redis or a database: `pagemill parse` without `--server`, and eval.

It runs the same validation, page split, engine pipeline and Markdown rendering as the platform does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from services.core.elements import page_markdown, renumber
from services.core.errors import PagemillError
from services.core.formats import NATIVE_TYPES, sniff_office
from services.core.pages import PageEntry, PageErrorEntry, entry_size, needs_review
from services.core.pdf import PDF, image_frame_png, inspect_document, split_pdf
from services.core.settings import Settings
from services.results.furniture import mark_running_furniture
from services.results.render.markdown import render_markdown
from services.worker.engines import PageInput, PageOutput, load_engine
from services.worker.pipeline.page import run_page


@dataclass(slots=True)
class LocalResult:
    markdown: str
    pages: list[PageEntry] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def failed(self) -> int:
        return sum(1 for page in self.pages if page["status"] != "succeeded")


def page_inputs(data: bytes, page_numbers: list[int] | None = None) -> tuple[str, list[tuple[int, str, bytes]]]:
    """(media type, [(page number, page media type, page bytes)]) for every selected page of a file."""
    info = inspect_document(data)
    numbers = page_numbers or list(range(1, info.page_count + 1))
    if info.media_type == PDF:
        return info.media_type, [(n, PDF, b) for n, b in zip(numbers, split_pdf(data, numbers), strict=True)]
    if numbers == [1]:
        return info.media_type, [(1, info.media_type, data)]
    return info.media_type, [(n, "image/png", image_frame_png(data, n - 1)) for n in numbers]


def parse_locally(data: bytes, settings: Settings, *, engine_name: str | None = None,
                  on_page: Callable[[PageEntry], None] | None = None) -> LocalResult:
    started = time.perf_counter()
    engine = load_engine(engine_name or settings.engine.kind.value, settings)
    _, pages = page_inputs(data)
    entries: list[PageEntry] = []
    for index, (number, media_type, page_bytes) in enumerate(pages):
        try:
            outcome = run_page(engine, PageInput("local", index, media_type, page_bytes), settings)
            entry = succeeded_entry(index, number, outcome.output, outcome.latency_ms, is_fallback=outcome.is_fallback,
                                    needs_review_below=settings.quality.needs_review_below)
        except PagemillError as exc:
            entry = failed_entry(index, number, exc.code, str(exc))
        except Exception as exc:  # noqa: BLE001 - one bad page must not lose the others
            entry = failed_entry(index, number, "engine_error", f"{type(exc).__name__}: {exc}")
        entries.append(entry)
        if on_page:
            on_page(entry)
    mark_running_furniture(entries)  # as the platform's assembly does
    return LocalResult(render_markdown(entries), entries, time.perf_counter() - started)


def parse_natively(data: bytes, settings: Settings) -> LocalResult | None:
    """A DOCX, HTML, EPUB or e-mail read from its own structure, as the worker reads it (one page, no boxes);
    None for any other file. One the native reader refuses is converted by LibreOffice and its pages parsed.
    Raises `PagemillError` for a file the guard refuses (or LibreOffice cannot open)."""
    media_type = sniff_office(data)
    if media_type not in NATIVE_TYPES or not settings.convert.native:
        return None
    from services.worker.office import convert_document  # the readers: imported only here

    started = time.perf_counter()
    converted = convert_document(data, media_type, settings)
    if converted.elements is None:
        return parse_locally(converted.pdf, settings)
    seconds = time.perf_counter() - started
    # read from the file's structure: no model, no page size, nothing to review
    entry = PageEntry(page=1, page_number=1, status="succeeded", markdown=page_markdown(converted.elements),
                      engine="native", model=None, latency_ms=round(seconds * 1000), confidence=1.0,
                      needs_review=False, is_fallback=False, signals={}, warnings=[], width=None, height=None,
                      elements=[e.model_dump(mode="json") for e in converted.elements])
    return LocalResult(render_markdown([entry]), [entry], seconds)


def succeeded_entry(index: int, number: int, output: PageOutput, latency_ms: int, *, is_fallback: bool,
                    needs_review_below: float = 0.0) -> PageEntry:
    """The `index`-th page parsed (page `number` of the file) as its entry; the keys a local parse knows.
    `needs_review_below`: `settings.quality.needs_review_below` (0: never flagged)."""
    return PageEntry(page=index + 1, page_number=number, status="succeeded", markdown=output.markdown,
                     engine=output.engine, model=output.model, latency_ms=latency_ms, confidence=output.confidence,
                     is_fallback=is_fallback,
                     needs_review=needs_review("succeeded", output.confidence, needs_review_below),
                     signals=output.signals, warnings=list(output.warnings), width=output.width, height=output.height,
                     elements=[e.model_dump(mode="json") for e in renumber(output.elements, number)])


def failed_entry(index: int, number: int, code: str, message: str) -> PageEntry:
    """The `index`-th page (page `number` of the file) failed with an error code and message."""
    return PageEntry(page=index + 1, page_number=number, status="failed",
                     error=PageErrorEntry(code=code, message=message))


def render_local(result: LocalResult, settings: Settings, formats: list[str], *, filename: str,
                 source: bytes | None = None, keep_furniture: bool = False,
                 figures: dict[str, bytes] | None = None, merge: bool = False) -> dict[str, bytes]:
    """The requested output formats of a document parsed in this process (`pagemill parse --format`).
    `source`: the file, to crop its figures from (their images are put in `figures`, by path) and read its
    form fields from;
    `keep_furniture`: `furniture=keep`; `merge`: tables across pages merged. They change `result.pages` as the
    platform's assembly does."""
    from services.results.checkboxes import mark_checkboxes
    from services.results.figures import KeptFigures, crop_figures, page_image
    from services.results.forms import add_form_fields, read_form_fields
    from services.results.furniture import keep_furniture as keep_heads_and_feet
    from services.results.key_values import layout_fields
    from services.results.marks import mark_boxes
    from services.results.render.formats import render_document
    from services.results.tables import merge_tables

    if merge:
        merge_tables(result.pages)
    kept = KeptFigures()
    if source is not None:
        _, pages = page_inputs(source, [int(page["page_number"]) for page in result.pages])
        by_position = {index + 1: page for index, page in enumerate(pages)}
        kept = crop_figures(result.pages, lambda entry: page_image(
            by_position[int(entry["page"])][2], *entry_size(entry), settings))
        if figures is not None:
            figures.update(kept.images)
    fields: list[dict[str, Any]] = []
    if source is not None and source.startswith(b"%PDF"):
        fields = add_form_fields(result.pages, read_form_fields(source, [int(p["page_number"]) for p in result.pages
                                                                         if p["status"] == "succeeded"]))
    mark_checkboxes(result.pages)
    if source is not None and all(media == PDF or media.startswith("image/") for _, media, _ in pages):
        mark_boxes(result.pages, source if source.startswith(b"%PDF") else None, lambda entry: page_image(
            by_position[int(entry["page"])][2], *entry_size(entry), settings))
    fields += layout_fields(result.pages)
    if keep_furniture:
        keep_heads_and_feet(result.pages)
    status = "succeeded" if result.failed == 0 else ("failed" if result.failed == len(result.pages) else "partial")
    body: dict[str, Any] = {"filename": filename, "status": status, "pages_total": len(result.pages),
                            "pages_done": len(result.pages) - result.failed, "pages_failed": result.failed,
                            "pages_needing_review": sum(1 for page in result.pages if page.get("needs_review")),
                            "pages": result.pages, "figures": kept.assets, "fields": fields}
    return render_document(result.pages, body, settings, only=formats, figures=kept.images,
                           keep_furniture=keep_furniture).bodies
