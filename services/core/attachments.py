"""An e-mail's attachments as its child documents: how the e-mail lists them, with each child's live status.

The worker decides, at the e-mail's conversion, which attachment becomes a child document and which is refused
with a reason; that list is kept in the e-mail's options (`attachments`). Readers (`GET /v1/documents/{id}`, the
JSON result) join it with the children's rows, whose status is their own: the e-mail does not wait for them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from services.core.db.models import Document


def child_id(parent_id: str, index: int) -> str:
    """The child document of attachment `index` (0-based): the same id on every run of the conversion job, so a
    retried job finds the child it made instead of making another."""
    return f"{parent_id}_{index + 1}"


def listed(document: Document) -> list[dict[str, Any]]:
    return list((document.options or {}).get("attachments") or [])


def with_statuses(session: Session, documents: Iterable[Document]) -> dict[str, list[dict[str, Any]]]:
    """Each e-mail's attachment list with its children's current status and error (one query for all)."""
    parents = {d.id: listed(d) for d in documents if listed(d)}
    if not parents:
        return {}
    rows = session.execute(sa.select(Document.id, Document.status, Document.error_code, Document.error_message)
                           .where(Document.parent_id.in_(list(parents)), Document.deleted_at.is_(None))).all()
    children = {row.id: row for row in rows}
    views: dict[str, list[dict[str, Any]]] = {}
    for parent, entries in parents.items():
        views[parent] = []
        for entry in entries:
            child = children.get(entry.get("id") or "")
            view = {**entry}
            if child is not None:
                view["status"] = child.status
                view["error"] = ({"code": child.error_code, "message": child.error_message or ""}
                                 if child.error_code else None)
            elif entry.get("id"):
                view["status"] = "deleted"
            views[parent].append(view)
    return views
