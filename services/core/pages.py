"""One page, one schema: what `GET /v1/documents/{id}/pages/{n}` answers and what each entry of the JSON result
(`result?format=json`, `document.json`) holds, built by one function from the page row and its stored result."""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict, cast

from pydantic import BaseModel, ConfigDict, Field

from services.core.db.models import Page
from services.core.elements import Element, from_wire

# Keys of the page row's `details` that the page shows at its top level, not again under `details`.
_PROMOTED = ("finish_reason", "prompt_tokens", "completion_tokens", "signals", "fallback_reason")


class PageErrorRead(BaseModel):
    code: str
    message: str


class PageRead(BaseModel):
    """A page of a document: its status, its Markdown and element tree, and how it was made."""

    model_config = ConfigDict(extra="forbid")

    document_id: str
    page: int = Field(description="1-based position in the document, as in `/pages/{n}` (a `pages` selection "
                                  "of '3-4' has pages 1 and 2)")
    page_number: int = Field(description="1-based page number in the uploaded file")
    status: str
    markdown: str | None = Field(description="null until the page has succeeded")
    width: float | None = Field(default=None, description="the page as displayed (after /Rotate) in PDF points; "
                                                          "image uploads: pixels (1 px = 1 pt, 72 dpi)")
    height: float | None = None
    elements: list[Element] = Field(default_factory=list, description="the element tree in reading order; "
                                                                      "`markdown` is its rendering")
    engine: str | None
    model: str | None
    attempts: int
    latency_ms: int | None
    is_fallback: bool
    fallback_reason: str | None = None
    confidence: float | None
    needs_review: bool = Field(default=False, description="the page succeeded with a confidence under "
                                                          "`quality.needs_review_below` (0.8): worth a reader's look")
    signals: dict[str, float] = Field(default_factory=dict, description="what `confidence` was computed from")
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    rotation: int = Field(default=0, description="degrees the page was turned before recognition")
    warnings: list[str] = Field(default_factory=list, description="what the reader should know: `text_dropped` "
                                "(the page holds text the output lost; its confidence is low)")
    details: dict[str, Any] = Field(default_factory=dict, description="engine diagnostics: attempt log, "
                                                                      "anchor, cache hit, …")
    error: PageErrorRead | None = None


def needs_review(status: str, confidence: float | None, below: float) -> bool:
    """A page worth a reader's look: it succeeded, and its confidence is under `below`."""
    return status == "succeeded" and confidence is not None and confidence < below


class PageErrorEntry(TypedDict):
    code: str
    message: str


class PageEntry(TypedDict):
    """One page as a document's assembly, `pagemill parse` and the renderers pass it along, and as the JSON
    result lists it: on the platform `PageRead`'s JSON (`page_entry`), every key; from a local parse
    (`services/runner.py`) the keys it knows. Assembly's steps (furniture, tables, figures, boxes, forms)
    change `elements` and `markdown` in place. `elements` holds each element's JSON (`Element.model_dump`)."""

    document_id: NotRequired[str]
    page: int
    page_number: int
    status: str
    markdown: NotRequired[str | None]
    width: NotRequired[float | None]
    height: NotRequired[float | None]
    elements: NotRequired[list[dict[str, Any]]]
    engine: NotRequired[str | None]
    model: NotRequired[str | None]
    attempts: NotRequired[int]
    latency_ms: NotRequired[int | None]
    is_fallback: NotRequired[bool]
    fallback_reason: NotRequired[str | None]
    confidence: NotRequired[float | None]
    needs_review: NotRequired[bool]
    signals: NotRequired[dict[str, float]]
    finish_reason: NotRequired[str | None]
    prompt_tokens: NotRequired[int]
    completion_tokens: NotRequired[int]
    rotation: NotRequired[int]
    warnings: NotRequired[list[str]]
    details: NotRequired[dict[str, Any]]
    error: NotRequired[PageErrorEntry | None]


def entry_elements(entry: PageEntry) -> list[Element]:
    """The page's element tree read back from its entry (an entry built in a test may hold `Element`s)."""
    return [e if isinstance(e, Element) else Element.model_validate(e) for e in entry.get("elements") or []]


def entry_size(entry: PageEntry) -> tuple[float, float]:
    """The page as displayed, in PDF points (width, height); 0 for a side that was not measured."""
    return float(entry.get("width") or 0), float(entry.get("height") or 0)


def page_entry(page: Page, result: dict[str, Any] | None, needs_review_below: float) -> PageEntry:
    """The page as the JSON result lists it: the same schema as `GET /v1/documents/{id}/pages/{n}`."""
    # PageRead's fields are PageEntry's keys, in its order (tests/unit/test_page_entry.py)
    return cast(PageEntry, page_read(page, result, needs_review_below=needs_review_below).model_dump(mode="json"))


def page_read(page: Page, result: dict[str, Any] | None, *, needs_review_below: float) -> PageRead:
    """The page from its row and its stored result (`storage.load_page_result`; None when not stored);
    `needs_review_below`: `settings.quality.needs_review_below`."""
    details = dict(page.details or {})
    promoted = {key: details.pop(key) for key in _PROMOTED if key in details}
    source = {**promoted, **(result or {})}  # the stored result wins over the row's copy
    error = PageErrorRead(code=page.error_code, message=page.error_message or "") if page.error_code else None
    return PageRead(
        document_id=page.document_id, page=page.index + 1, page_number=page.page_number, status=page.status,
        markdown=result.get("markdown", "") if result is not None else None,
        width=(result or {}).get("width") or None, height=(result or {}).get("height") or None,
        elements=[from_wire(raw) for raw in (result or {}).get("elements") or []],
        engine=page.engine, model=page.model, attempts=page.attempts, latency_ms=page.latency_ms,
        is_fallback=page.is_fallback, fallback_reason=source.get("fallback_reason") or None,
        confidence=page.confidence, needs_review=needs_review(page.status, page.confidence, needs_review_below),
        signals=source.get("signals") or {},
        finish_reason=source.get("finish_reason") or None, prompt_tokens=int(source.get("prompt_tokens") or 0),
        completion_tokens=int(source.get("completion_tokens") or 0), rotation=int(source.get("rotation") or 0),
        warnings=[str(w) for w in (result or {}).get("warnings") or []], details=details, error=error,
    )


class AttachmentRead(BaseModel):
    """One attachment of an e-mail: its child document (`id`, that document's `status`), or `status: rejected`
    with the reason in `error` (an unsupported type, over the limits)."""

    index: int = Field(description="0-based position among the e-mail's attachments")
    filename: str
    media_type: str
    size_bytes: int
    id: str | None = Field(default=None, description="the child document, `GET /v1/documents/{id}`")
    status: str = Field(description="the child document's status; `rejected` (not parsed) or `deleted`")
    error: PageErrorRead | None = None


class FigureAsset(BaseModel):
    """A figure's image, kept beside the document's results (`documents/{id}/figures/{name}`)."""

    model_config = ConfigDict(extra="forbid")

    element_id: str = Field(description="the figure element (`p3-e5`)")
    page: int = Field(description="1-based page number in the uploaded file")
    bbox: tuple[float, float, float, float] = Field(description="the figure on its page, PDF points, top-left origin")
    path: str = Field(description="`figures/{name}`: relative to the results, as Markdown and LaTeX name it")
    media_type: str
    width_px: int
    height_px: int
    bytes: int
    caption_id: str | None = Field(default=None, description="the caption element's id, when it has one")
    caption: str = Field(default="", description="the caption's text")


class FormFieldRead(BaseModel):
    """One field of the document: a widget of the PDF's own form (AcroForm, a `form_field` element), a checkbox
    found on a page (a `checkbox` element), or a key–value pair of its layout (in a paragraph or table)."""

    model_config = ConfigDict(extra="forbid")

    element_id: str
    page: int = Field(description="1-based page number in the uploaded file")
    name: str = Field(description="the field's full name")
    type: str = Field(description="text, checkbox, radio, combobox, listbox, signature, button; key_value")
    value: str = Field(description="the field's value; a radio button: its own option")
    checked: bool | None = Field(description="checkboxes and radio buttons: ticked or not")
    label: str = Field(description="the field's tooltip (/TU), else its name")
    bbox: tuple[float, float, float, float] | None = Field(description="the widget, PDF points, top-left origin")
    source: str = Field(default="acroform", description="acroform: the PDF's own form; page: a checkbox printed, "
                                                        "drawn or scanned; layout: a key–value pair of the text")


class DocumentResult(BaseModel):
    """`result?format=json` (`document.json`): the document and every page in order."""

    model_config = ConfigDict(extra="forbid")

    id: str
    status: str
    filename: str
    pages_total: int
    pages_done: int
    pages_failed: int
    mode: str
    metadata: dict[str, Any]
    created_at: str | None = Field(description="ISO 8601, UTC")
    pages: list[PageRead]
    pages_needing_review: int = Field(default=0, description="succeeded pages whose confidence is under "
                                                             "`quality.needs_review_below`: `needs_review` pages")
    formats: list[str] = Field(default_factory=list, description="the formats stored for the document")
    conversion: dict[str, Any] | None = Field(
        default=None, description="office documents: what the conversion found — `warnings`, `sheets` (every sheet's "
                                  "cells and HTML table), `slides` (every slide's title, paragraphs, list items and "
                                  "tables), `charts` (kind, title, data), `attachments` (e-mail)")
    parent_id: str | None = Field(default=None, description="an e-mail attachment's document: the e-mail's id")
    figures: list[FigureAsset] = Field(
        default_factory=list, description="the figures' images, each served by `GET /v1/documents/{id}/figures/{name}`"
                                          " (none when the upload said `figures=false`)")
    fields: list[FormFieldRead] = Field(
        default_factory=list, description="a PDF's own form fields (AcroForm, each also a `form_field` "
                                          "element), then the checkboxes and key–value pairs found on the pages")
    attachments: list[AttachmentRead] = Field(
        default_factory=list, description="an e-mail's attachments, each a child document or refused with a reason; "
                                          "statuses as they were when the e-mail finished")
