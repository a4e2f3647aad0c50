"""The documents API's request and response bodies."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import Path
from pydantic import BaseModel, ConfigDict, Field

from services.core.pages import AttachmentRead, PageRead

__all__ = ["AttachmentRead", "DocumentCreated", "DocumentDeleted", "DocumentList", "DocumentRead", "ErrorBody",
           "ErrorResponse", "PageNumber", "PageRead"]


class ErrorBody(BaseModel):
    code: str
    message: str


class ErrorResponse(BaseModel):
    error: ErrorBody


class DocumentCreated(BaseModel):
    id: str
    status: str
    pages_total: int
    status_url: str
    cached: bool = False  # answered from the result cache: already finished, nothing was charged
    webhook_id: str | None = None  # the endpoint made from `webhook_url` (see /v1/webhooks/{id}/deliveries)


class DocumentRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

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
    expired_at: datetime | None = None  # the retention sweep deleted its stored data
    formats: list[str] = Field(default_factory=list,
                               description="result formats ready to fetch (`result?format=`); empty until it ends")
    task: str = Field(default="parse", description="parse, translate, extract or summarize (the upload's `task`)")
    parent_id: str | None = Field(default=None, description="an e-mail attachment's document: the e-mail's id")
    pages_needing_review: int = Field(
        default=0, description="succeeded pages whose confidence is under `quality.needs_review_below` (0.8): "
                               "each page says `needs_review`")
    needs_review_below: float = Field(
        default=0.8, description="the threshold `needs_review` and `pages_needing_review` were judged against "
                                 "(`quality.needs_review_below`); element confidences under it are worth a look too")
    attachments: list[AttachmentRead] = Field(
        default_factory=list, description="an e-mail's attachments (known once it is converted): each its own "
                                          "child document with its current status, or `rejected` with a reason")


class DocumentList(BaseModel):
    data: list[DocumentRead]
    next_cursor: str | None


class DocumentDeleted(BaseModel):
    id: str
    status: str
    deleted: bool


# 1-based; at most what a page's index column holds (a larger number is no page: 422, never an overflow's 500)
MAX_PAGE_NUMBER = 2**31 - 1
PageNumber = Annotated[int, Path(ge=1, le=MAX_PAGE_NUMBER,
                                 description="the page's 1-based position among the document's parsed pages")]
