"""Documents: accept an upload, look one up, list, cancel. Validation happens before anything is queued."""

from __future__ import annotations

import json
import math
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from services.core import erasure
from services.core.db.models import DOCUMENT_FINAL, Document, DocumentStatus, Page, PageStatus, new_id, utcnow
from services.core.document_tasks import TaskSpec, parse_task
from services.core.documents import NewDocument, insert_document
from services.core.errors import (
    NotFound,
    ResultExpired,
    ResultNotReady,
    TooManyPages,
    UnsupportedMediaType,
    ValidationFailed,
    clip,
)
from services.core.formats import EML, NATIVE_TYPES, sniff_office
from services.core.lifecycle import cancel_document
from services.core.lifecycle.marks import mark_deleted
from services.core.pdf import EXTENSIONS, DocumentInfo, inspect_document
from services.core.selection import check_page_selection_form, parse_page_selection
from services.core.settings import EngineKind, Settings
from services.core.storage import ObjectNotFound, ObjectStore, document_prefix, source_key

MODES = ("fast", "balanced", "accurate")
MAX_METADATA_BYTES = 16_384
MAX_METADATA_DEPTH = 32


def parse_metadata(raw: str | None) -> dict[str, Any]:
    """A JSON object of at most 16 KiB and 32 levels, with finite numbers only: what is stored comes back as sent
    (NaN, Infinity and 1e999 have no JSON form to return)."""
    if raw is None or not raw.strip():
        return {}
    if len(raw.encode()) > MAX_METADATA_BYTES:
        raise ValidationFailed(f"metadata: at most {MAX_METADATA_BYTES // 1024} KiB")
    try:
        value = json.loads(raw, parse_float=_finite_float, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise ValidationFailed(f"metadata: not valid JSON ({exc.msg})") from exc
    except RecursionError as exc:
        raise ValidationFailed(f"metadata: nested deeper than {MAX_METADATA_DEPTH} levels") from exc
    except ValueError as exc:  # a non-finite number, an integer over Python's int-string limit
        raise ValidationFailed(clip(f"metadata: {exc}")) from exc
    if not isinstance(value, dict):
        raise ValidationFailed("metadata: must be a JSON object")
    if _depth(value) > MAX_METADATA_DEPTH:
        raise ValidationFailed(f"metadata: nested deeper than {MAX_METADATA_DEPTH} levels")
    return value


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} is out of range")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _depth(value: Any) -> int:
    """Nesting depth of a parsed JSON value, without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def resolve_mode(mode: str | None, settings: Settings) -> str:
    if mode is None or not mode.strip():
        return "balanced" if settings.engine.kind == EngineKind.VLLM else "fast"
    if mode not in MODES:
        raise ValidationFailed(f"mode: must be one of {', '.join(MODES)}")
    return mode


def engine_for_mode(mode: str, settings: Settings) -> str:
    """The engine a document's pages go to by default."""
    if settings.engine.kind == EngineKind.VLLM and mode == "fast":
        return EngineKind.CPU.value
    return settings.engine.kind.value


@dataclass(frozen=True, slots=True)
class Upload:
    """A received upload: the file on disk (never in memory), its size and SHA-256, and the form fields."""

    source: Path
    size: int
    sha256: str
    filename: str
    pages: str | None = None
    metadata: str | None = None
    mode: str | None = None
    task: str | None = None
    target_language: str | None = None
    schema: str | None = None


@dataclass(frozen=True, slots=True)
class Accepted:
    """An upload that passed validation: what it is and what to parse."""

    info: DocumentInfo
    page_numbers: list[int]
    metadata: dict[str, Any]
    mode: str
    engine: str
    sha256: str
    task: TaskSpec = TaskSpec()


def office_accepted(settings: Settings, media_type: str | None = None) -> bool:
    """Office documents are accepted where LibreOffice converts them (`PAGEMILL_CONVERT__ENABLED`); with `auto`,
    DOCX, HTML, EPUB and e-mail also where it does not, since the worker reads them natively."""
    if settings.convert.enabled == "auto":
        if settings.convert.native and media_type in NATIVE_TYPES:
            return True
        return shutil.which("soffice") is not None or shutil.which("libreoffice") is not None
    return settings.convert.enabled == "true"


def validate_upload(upload: Upload, settings: Settings, *, max_pages: int | None = None) -> Accepted:
    """Type, pages, metadata, mode and task, checked before anything is stored or queued.

    An office document's pages are known only once it is converted: its page selection is checked for form
    here and applied (with the page limit) by the worker after the conversion."""
    office_type = sniff_office(upload.source)
    if office_type is not None:
        if not office_accepted(settings, office_type):
            raise UnsupportedMediaType("office documents need LibreOffice, which this deployment does not run "
                                       "(PAGEMILL_CONVERT__ENABLED)")
        check_page_selection_form(upload.pages)
        info, page_numbers = DocumentInfo(office_type, 0), []
    else:
        info = inspect_document(upload.source)
        page_numbers = parse_page_selection(upload.pages, info.page_count)
    limit = max_pages or settings.limits.max_pages
    if len(page_numbers) > limit:
        raise TooManyPages(f"the document has {len(page_numbers)} pages to parse; the limit is {limit}")
    mode = resolve_mode(upload.mode, settings)
    task = parse_task(upload.task, upload.target_language, upload.schema, settings)
    return Accepted(info=info, page_numbers=page_numbers, metadata=parse_metadata(upload.metadata), mode=mode,
                    engine=engine_for_mode(mode, settings), sha256=upload.sha256, task=task)


def create_document(session: Session, store: ObjectStore, settings: Settings, upload: Upload, *,
                    tenant_id: str | None, request_id: str | None,
                    accepted: Accepted | None = None, priority: int = 0, options: dict[str, Any] | None = None,
                    cache_key: str | None = None, document_id: str | None = None,
                    source_stored: bool = False) -> Document:
    """Validates, stores the source and writes the rows; the split job is enqueued, sent after the commit.

    With `source_stored`, the caller already stored the source under `document_id`'s key."""
    accepted = accepted or validate_upload(upload, settings)
    document_id = document_id or new_id("doc")
    key = source_key(document_id, EXTENSIONS[accepted.info.media_type])
    if not source_stored:
        store.put_file(key, upload.source, content_type=accepted.info.media_type)
    return insert_document(session, NewDocument(
        id=document_id, tenant_id=tenant_id, filename=upload.filename, media_type=accepted.info.media_type,
        size_bytes=upload.size, sha256=accepted.sha256, source_key=key, page_numbers=accepted.page_numbers,
        mode=accepted.mode, engine=accepted.engine, metadata=accepted.metadata, options=options or {},
        request_id=request_id, priority=priority, cache_key=cache_key, pages_spec=upload.pages,
        task=accepted.task.kind.value, task_params=accepted.task.params), settings)


def visible_documents(tenant_id: str | None) -> sa.Select[Document]:
    query = sa.select(Document).where(Document.deleted_at.is_(None))
    if tenant_id is not None:
        query = query.where(Document.tenant_id == tenant_id)
    return query


def get_document(session: Session, document_id: str, tenant_id: str | None = None) -> Document:
    document = session.execute(visible_documents(tenant_id).where(Document.id == document_id)).scalar_one_or_none()
    if document is None:
        raise NotFound(f"no document {document_id!r}")
    return document


def finished_document(session: Session, document_id: str, tenant_id: str | None, what: str) -> Document:
    """The document, once `what` (its result, its figures) exists: 409 while it is unfinished or when it was
    cancelled, 410 once the retention period erased its results."""
    document = get_document(session, document_id, tenant_id)
    if document.status not in DOCUMENT_FINAL or document.status == "cancelled":
        raise ResultNotReady(f"the document is {document.status}; {what} once it has finished")
    if document.expired_at is not None:
        raise ResultExpired("the document's results were deleted when its retention period ended")
    return document


def list_documents(session: Session, *, tenant_id: str | None, limit: int, cursor: str | None,
                   status: DocumentStatus | None) -> tuple[list[Document], str | None]:
    query = visible_documents(tenant_id)
    if cursor:
        query = query.where(Document.id < cursor)
    if status:
        query = query.where(Document.status == status)
    rows = list(session.execute(query.order_by(Document.id.desc()).limit(limit + 1)).scalars())
    next_cursor = rows[limit - 1].id if len(rows) > limit else None
    return rows[:limit], next_cursor


def pages_needing_review(session: Session, document_ids: list[str], below: float) -> dict[str, int]:
    """Per document, its succeeded pages whose confidence is under `below` (`quality.needs_review_below`);
    documents without one are left out."""
    if not document_ids:
        return {}
    rows = session.execute(
        sa.select(Page.document_id, sa.func.count()).where(
            Page.document_id.in_(document_ids), Page.status == PageStatus.SUCCEEDED, Page.confidence < below)
        .group_by(Page.document_id))
    return {document_id: int(count) for document_id, count in rows}


def get_page(session: Session, document: Document, position: int) -> Page:
    page = session.get(Page, (document.id, position - 1)) if position >= 1 else None
    if page is None:
        raise NotFound(f"document {document.id!r} has no page {position}")
    return page


def delete_document(session: Session, store: ObjectStore, document: Document) -> str:
    """Cancels what is pending and erases the stored data and the rows' copies of the customer's data; an
    e-mail's attachment documents go with it. Returns the document's last status."""
    for child in session.execute(visible_documents(document.tenant_id).where(
            Document.parent_id == document.id)).scalars().all():
        _delete_one(session, store, child)
    for child_id in _planned_children(store, document):  # stored, but the e-mail ended before they were made
        store.delete_prefix(document_prefix(child_id))
    return _delete_one(session, store, document)


def _planned_children(store: ObjectStore, document: Document) -> list[str]:
    """The child ids an e-mail's conversion planned (`conversion.json`, written by the worker)."""
    if document.media_type != EML:
        return []
    try:
        planned = json.loads(store.get(f"{document_prefix(document.id)}conversion.json")).get("attachments") or []
    except (ObjectNotFound, ValueError):
        return []
    return [str(entry["id"]) for entry in planned if isinstance(entry, dict) and entry.get("id")]


def _delete_one(session: Session, store: ObjectStore, document: Document) -> str:
    if document.status not in DOCUMENT_FINAL:
        cancel_document(session, document.id)
        session.refresh(document)
    now = utcnow()
    mark_deleted(document, now)
    session.flush()
    erasure.scrub_document(session, document.id, now)  # a pending `document.cancelled` webhook is sent whole
    store.delete_prefix(document_prefix(document.id))
    return str(document.status)
