"""`/v1/batches`: what a batch answers."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from services.gateway.documents.schemas import ErrorBody


class BatchItem(BaseModel):
    index: int = Field(description="0-based position among the batch's files, then its URLs")
    source: str = Field(description="the file's name or the URL")
    document_id: str | None = Field(description="the document made from it; null when it was refused")
    error: ErrorBody | None = Field(default=None, description="why it was refused (the upload's error)")


class BatchCreated(BaseModel):
    id: str
    documents_total: int = Field(description="documents in the batch (the items not refused)")
    items: list[BatchItem]
    status_url: str


class BatchDocument(BaseModel):
    id: str
    status: str


class BatchRead(BaseModel):
    id: str
    status: Literal["running", "completed"] = Field(description="completed: every document has ended")
    documents_total: int
    counts: dict[str, int] = Field(description="documents per status: queued, running, succeeded, partial, "
                                               "failed, cancelled")
    documents: list[BatchDocument]
    metadata: dict[str, Any]
    created_at: datetime
    completed_at: datetime | None
