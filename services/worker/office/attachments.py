"""An e-mail's attachments made into child documents of the same tenant, counted against the e-mail's limits.

    conversion ─▶ plan: each attachment accepted (source stored) or refused with a reason
    page rows of the e-mail claimed ─same transaction─▶ child rows + their jobs (the upload's path)

The plan is made once, when the e-mail is converted, and kept in `conversion.json` and the e-mail's options; a
retried conversion job reads it back. A child's id is the e-mail's id and the attachment's position, so the
rows are written at most once (in the transaction that writes the e-mail's page rows, which only one run wins).

Limits apply to the e-mail and its children together: a PDF or image attachment is refused with `too_many_pages`
when its pages with the e-mail's own and the earlier attachments' would pass the per-document page limit, and
the attachments' bytes together stay within the per-document size limit. An office attachment's pages are
known only when it is converted: it may use what its family has left then (`family_page_budget`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from services.core import events
from services.core.attachments import child_id
from services.core.db.models import Document, WebhookEndpoint, new_id, utcnow
from services.core.documents import NewDocument, insert_document
from services.core.errors import InputError
from services.core.formats import sniff_office
from services.core.pdf import EXTENSIONS, inspect_document
from services.core.settings import Settings
from services.core.storage import ObjectStore, source_key
from services.core.tenants import TenantLimits
from services.worker.office.mail import Attachment

MAX_CHILDREN = 50
# Carried from the e-mail to its children: the caller's cache choices.
_INHERITED_OPTIONS = ("cache", "do_not_cache")


@dataclass(frozen=True, slots=True)
class Parent:
    id: str
    pages: int  # the e-mail's own pages to parse
    is_child: bool  # an e-mail that is itself an attachment: its attachments are listed, not parsed


def _kind(data: bytes) -> tuple[str, int | None]:
    """Media type and page count (None until converted, for an office file); raises `InputError`."""
    office = sniff_office(data)
    if office is not None:
        return office, None
    info = inspect_document(data)
    return info.media_type, info.page_count


def _refused(entry: dict[str, Any], code: str, message: str) -> dict[str, Any]:
    return {**entry, "id": None, "status": "rejected", "error": {"code": code, "message": message}}


def plan_children(parent: Parent, attachments: list[Attachment], limits: TenantLimits,
                  store: ObjectStore) -> list[dict[str, Any]]:
    """One entry per attachment, in order: accepted ones get their child's id (their source is stored under it),
    the others `status: rejected` with an error code and message."""
    pages_left, bytes_left = limits.max_pages - parent.pages, limits.max_file_bytes
    plan = []
    for index, attachment in enumerate(attachments):
        entry: dict[str, Any] = {"index": index, "filename": attachment.filename,
                                 "media_type": attachment.content_type, "size_bytes": len(attachment.data)}
        if parent.is_child:
            plan.append(_refused(entry, "nested_attachment", "an attachment of an attached e-mail is not parsed"))
            continue
        if index >= MAX_CHILDREN:
            plan.append(_refused(entry, "too_many_attachments",
                                 f"only the first {MAX_CHILDREN} attachments of an e-mail are parsed"))
            continue
        try:
            media_type, pages = _kind(attachment.data)
        except InputError as exc:
            plan.append(_refused(entry, exc.code, str(exc)))
            continue
        entry["media_type"] = media_type
        if len(attachment.data) > bytes_left:
            plan.append(_refused(entry, "file_too_large",
                                 f"the attachments together would pass the limit of {limits.max_file_bytes:,} bytes"))
            continue
        if pages is not None and pages > pages_left:
            plan.append(_refused(entry, "too_many_pages",
                                 f"its {pages} pages with the e-mail's would pass the limit of {limits.max_pages} "
                                 f"pages per document ({max(pages_left, 0)} left)"))
            continue
        bytes_left -= len(attachment.data)
        pages_left -= pages or 0
        child = child_id(parent.id, index)
        store.put(source_key(child, EXTENSIONS[media_type]), attachment.data, content_type=media_type)
        plan.append({**entry, "id": child, "status": "queued", "error": None, "pages": pages,
                     "sha256": hashlib.sha256(attachment.data).hexdigest()})
    return plan


def insert_children(session: Session, parent: Document, plan: list[dict[str, Any]], settings: Settings) -> list[str]:
    """The accepted attachments' documents, written in the caller's transaction and queued after its commit,
    each with its `document.queued` event (and the e-mail's `webhook_url` endpoint, if it had one)."""
    wanted = [entry for entry in plan if entry.get("id")]
    existing = set(session.execute(sa.select(Document.id).where(
        Document.id.in_([entry["id"] for entry in wanted]))).scalars()) if wanted else set()
    endpoint = _parent_endpoint(session, parent)
    made = []
    for entry in wanted:
        if entry["id"] in existing:
            continue
        media_type, pages = entry["media_type"], entry.get("pages")
        child = insert_document(session, NewDocument(
            id=entry["id"], tenant_id=parent.tenant_id, filename=entry["filename"], media_type=media_type,
            size_bytes=entry["size_bytes"], sha256=entry["sha256"],
            source_key=source_key(entry["id"], EXTENSIONS[media_type]),
            page_numbers=list(range(1, pages + 1)) if pages else [], mode=parent.mode, engine=parent.engine,
            metadata=dict(parent.metadata_ or {}),
            options={k: v for k, v in (parent.options or {}).items() if k in _INHERITED_OPTIONS},
            request_id=parent.request_id, priority=parent.priority, parent_id=parent.id), settings)
        if endpoint is not None:
            copy = WebhookEndpoint(id=new_id("whe"), tenant_id=endpoint.tenant_id, url=endpoint.url, events=[],
                                   secret=endpoint.secret, document_id=child.id, created_at=utcnow())
            session.add(copy)
            child.options = {**child.options, "webhook_id": copy.id}
            session.flush()
        events.record(session, child, events.EventType.QUEUED)
        made.append(child.id)
    return made


def _parent_endpoint(session: Session, parent: Document) -> WebhookEndpoint | None:
    """The endpoint made from the e-mail's `webhook_url`: its children report to the same URL."""
    webhook_id = (parent.options or {}).get("webhook_id")
    return session.get(WebhookEndpoint, webhook_id) if webhook_id else None


def family_page_budget(session: Session, document: Document, limit: int) -> int:
    """The pages an attachment converted only now may have: the limit less its e-mail's and its siblings'."""
    if document.parent_id is None:
        return limit
    used = session.execute(sa.select(sa.func.coalesce(sa.func.sum(Document.pages_total), 0)).where(
        sa.or_(Document.id == document.parent_id, Document.parent_id == document.parent_id),
        Document.id != document.id)).scalar_one()
    return max(limit - int(used), 0)
