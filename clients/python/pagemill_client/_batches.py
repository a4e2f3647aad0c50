"""Batches (`POST /v1/batches`): the answers' types, the request's parts, and what `parse_many` hands back."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from pagemill_client._base import FileInput
from pagemill_client._models import Document, ErrorBody, Model


@dataclass(frozen=True, slots=True)
class BatchItem(Model):
    """One file or URL of a batch: the document made from it, or the error that refused it."""

    __schema__ = "BatchItem"
    index: int
    source: str
    document_id: str | None
    error: ErrorBody | None = None


@dataclass(frozen=True, slots=True)
class BatchCreated(Model):
    __schema__ = "BatchCreated"
    id: str
    documents_total: int
    items: list[BatchItem]
    status_url: str


@dataclass(frozen=True, slots=True)
class BatchDocument(Model):
    __schema__ = "BatchDocument"
    id: str
    status: str


@dataclass(frozen=True, slots=True)
class BatchRead(Model):
    """A batch's documents per status; `completed` once every one has ended."""

    __schema__ = "BatchRead"
    id: str
    status: str
    documents_total: int
    counts: dict[str, Any]  # status -> documents
    documents: list[BatchDocument]
    metadata: dict[str, Any]
    created_at: datetime
    completed_at: datetime | None


@dataclass(frozen=True, slots=True)
class BatchParsed:
    """What parse_many() hands back: each accepted item's finished Document (a failed one has no results), in the
    order given, and the items the server refused."""

    id: str
    documents: list[Document] = field(default_factory=list)
    refused: list[BatchItem] = field(default_factory=list)


def build_batch(files: Sequence[FileInput], urls: Sequence[str], *, mode: str | None,
                metadata: dict[str, Any] | None, webhook_url: str | None,
                pages: str | None) -> tuple[list[tuple[str, tuple[str, bytes]]], dict[str, Any]]:
    """The multipart parts (`file`, repeated) and fields (`url`, repeated, and the options) of a batch."""
    parts = []
    for file in files:
        if isinstance(file, bytes):
            parts.append(("file", ("document", file)))
        elif isinstance(file, str | os.PathLike):
            parts.append(("file", (Path(file).name, Path(file).read_bytes())))
        else:
            parts.append(("file", (Path(str(getattr(file, "name", "document"))).name, file.read())))
    data: dict[str, Any] = {"url": list(urls)} if urls else {}
    for name, value in (("mode", mode), ("webhook_url", webhook_url), ("pages", pages)):
        if value:
            data[name] = value
    if metadata is not None:
        data["metadata"] = json.dumps(metadata)
    return parts, data
