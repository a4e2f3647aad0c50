"""Typed answers of the API. Field names and types follow the gateway's OpenAPI schema (`__schema__` names the
component); tests/clients/test_python_schema.py fails when the two drift apart. Unknown fields in an answer are
ignored, so a newer server never breaks an older SDK."""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar, Literal, TypeVar, Union

# The last three: the answer of a document's model task (`task=extract|translate|summarize`).
Format = Literal["markdown", "html", "latex", "json", "chunks", "extraction", "translation", "summary"]
FORMATS: tuple[Format, ...] = typing.get_args(Format)
Mode = Literal["fast", "balanced", "accurate"]
Task = Literal["parse", "translate", "extract", "summarize"]
Furniture = Literal["drop", "keep"]  # keep: page headers and footers stay in Markdown, LaTeX and chunks
Status = Literal["queued", "running", "succeeded", "partial", "failed", "cancelled"]
FINAL_STATUSES = frozenset({"succeeded", "partial", "failed", "cancelled"})
# Formats whose body is JSON (the others are text).
JSON_FORMATS = frozenset({"json", "chunks", "extraction"})
# The result format that holds a model task's answer.
TASK_FORMATS: dict[str, Format] = {"translate": "translation", "extract": "extraction", "summarize": "summary"}


def formats_for(formats: Sequence[Format] | None, task: Task | None) -> tuple[Format, ...]:
    """`formats` as given, or Markdown plus the task's answer when none were given."""
    if formats is not None:
        return tuple(formats)
    answer = TASK_FORMATS.get(task or "parse")
    return ("markdown", answer) if answer else ("markdown",)

T = TypeVar("T", bound="Model")


def _parse_datetime(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _convert(hint: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        return _convert(options[0], value) if len(options) == 1 else value
    if hint is datetime:
        return _parse_datetime(value)
    if origin is list:
        (item,) = typing.get_args(hint) or (Any,)
        return [_convert(item, v) for v in value]
    if origin is tuple and isinstance(value, list):
        return tuple(value)
    if isinstance(hint, type) and issubclass(hint, Model):
        return hint.from_json(value)
    return value


class Model:
    """A dataclass read from a JSON object; `json_name` metadata maps a Python name to its JSON name."""

    __schema__: ClassVar[str | None] = None

    @classmethod
    def from_json(cls: type[T], data: dict[str, Any]) -> T:
        hints = _hints(typing.cast(type, cls))
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            name = f.metadata.get("json_name", f.name)
            if name in data:
                values[f.name] = _convert(hints[f.name], data[name])
        return cls(**values)


@dataclass(frozen=True, slots=True)
class ErrorBody(Model):
    __schema__ = "ErrorBody"
    code: str
    message: str


@dataclass(frozen=True, slots=True)
class DocumentCreated(Model):
    """The answer to an upload: the document is queued (or, `cached`, already finished)."""

    __schema__ = "DocumentCreated"
    id: str
    status: str
    pages_total: int
    status_url: str
    cached: bool = False
    webhook_id: str | None = None
    # Not in the body: the `Idempotent-Replayed` header (the answer to a retried upload).
    replayed: bool = field(default=False, metadata={"sdk_only": True})


@dataclass(frozen=True, slots=True)
class AttachmentRead(Model):
    """One attachment of an e-mail: its own child document (`id`, whose `status` this is), or `status: rejected`
    with the reason in `error`."""

    __schema__ = "AttachmentRead"
    index: int
    filename: str
    media_type: str
    size_bytes: int
    status: str
    id: str | None = None
    error: ErrorBody | None = None


@dataclass(frozen=True, slots=True)
class DocumentRead(Model):
    __schema__ = "DocumentRead"
    id: str
    status: str
    filename: str
    media_type: str
    mode: str
    pages_total: int
    pages_done: int
    pages_failed: int
    metadata: dict[str, Any]
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    error: ErrorBody | None
    cached: bool = False
    expired_at: datetime | None = None
    formats: list[str] = field(default_factory=list)
    parent_id: str | None = None  # an e-mail attachment's document: the e-mail's id
    attachments: list[AttachmentRead] = field(default_factory=list)
    task: str = "parse"
    pages_needing_review: int = 0  # succeeded pages under the server's review threshold (`needs_review`)
    needs_review_below: float = 0.8  # that threshold, as the server is set

    @property
    def finished(self) -> bool:
        return self.status in FINAL_STATUSES


@dataclass(frozen=True, slots=True)
class DocumentDeleted(Model):
    __schema__ = "DocumentDeleted"
    id: str
    status: str
    deleted: bool


@dataclass(frozen=True, slots=True)
class PageRead(Model):
    __schema__ = "PageRead"
    document_id: str
    page: int  # 1-based position in the document, as in /pages/{n}
    page_number: int  # 1-based page number in the uploaded file
    status: str
    markdown: str | None
    engine: str | None
    model: str | None
    attempts: int
    latency_ms: int | None
    is_fallback: bool
    confidence: float | None
    needs_review: bool = False  # succeeded with a confidence under the server's threshold (0.8 by default)
    width: float | None = None  # PDF points, as displayed
    height: float | None = None
    elements: list[Element] = field(default_factory=list)
    fallback_reason: str | None = None
    signals: dict[str, Any] = field(default_factory=dict)
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    rotation: int = 0
    warnings: list[str] = field(default_factory=list)  # `text_dropped`: the page holds text the output lost
    details: dict[str, Any] = field(default_factory=dict)
    error: ErrorBody | None = None


@dataclass(frozen=True, slots=True)
class UsageLine(Model):
    __schema__ = "UsageLine"
    mode: str
    engine: str
    pages: int
    cached_pages: int
    failed_pages: int


@dataclass(frozen=True, slots=True)
class UsageRead(Model):
    __schema__ = "UsageRead"
    from_: datetime = field(metadata={"json_name": "from"})
    to: datetime
    pages: int
    cached_pages: int
    failed_pages: int
    by_mode_engine: list[UsageLine]


@dataclass(frozen=True, slots=True)
class Element(Model):
    """One block of a page (services/core/elements.py): `bbox` is [x0, y0, x1, y1] in PDF points, top-left
    origin, or None where nothing on the page backs the element."""

    id: str
    type: str
    page: int
    bbox: tuple[float, float, float, float] | None
    text: str = ""
    markdown: str = ""
    html: str | None = None
    latex: str | None = None
    level: int | None = None
    items: list[str] | None = None
    ordered: bool | None = None
    alignment: float | None = None
    image: str | None = None
    caption_id: str | None = None
    field_name: str | None = None
    field_type: str | None = None
    value: str | None = None
    checked: bool | None = None
    parts: list[dict[str, Any]] | None = None
    chart: str | None = None  # figures that are charts: bar, line, … (their data table in `html` when `derived`)
    derived: bool | None = None
    confidence: float | None = None  # 0..1: how likely this block was read right (None: the engine gave none)


@dataclass(frozen=True, slots=True)
class Progress:
    """What a progress callback receives, each time the page counts move."""

    document_id: str
    status: str
    pages_total: int
    pages_done: int
    pages_failed: int

    @property
    def fraction(self) -> float:
        return (self.pages_done + self.pages_failed) / self.pages_total if self.pages_total else 1.0


@dataclass(frozen=True, slots=True)
class Document:
    """What parse() hands back: the finished document's state and the results of the formats asked for."""

    state: DocumentRead
    results: dict[str, Any] = field(default_factory=dict)

    def __getattr__(self, name: str) -> Any:  # every other field of the state (filename, created_at, ...)
        return getattr(self.state, name)

    @property
    def id(self) -> str:
        return self.state.id

    @property
    def status(self) -> str:
        return self.state.status

    @property
    def pages_total(self) -> int:
        return self.state.pages_total

    @property
    def pages_done(self) -> int:
        return self.state.pages_done

    @property
    def pages_failed(self) -> int:
        return self.state.pages_failed

    @property
    def metadata(self) -> dict[str, Any]:
        return self.state.metadata

    @property
    def error(self) -> ErrorBody | None:
        return self.state.error

    @property
    def markdown(self) -> str:
        value = self.results.get("markdown")
        if value is None:
            raise KeyError("markdown was not among the formats asked for")
        return str(value)

    def elements(self) -> list[Element]:
        """Every page's elements, in reading order, from the `json` result (empty when the server has none)."""
        body = self.results.get("json") or {}
        return [Element.from_json(e) for page in body.get("pages", []) for e in page.get("elements") or []]
