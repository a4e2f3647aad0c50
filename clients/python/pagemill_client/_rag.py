"""What the LangChain loader and the LlamaIndex reader share: files parsed through a `Client`, then cut into
records (one per page or per chunk) with the metadata a retrieval pipeline keeps: page, heading path, boxes."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pagemill_client._client import Client
from pagemill_client._errors import DocumentFailed
from pagemill_client._models import Document, Format, Mode

FilePaths = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]
Split = Literal["page", "chunk"]


@dataclass(frozen=True, slots=True)
class Record:
    """One piece of a parsed file: its text and its metadata (JSON values only)."""

    text: str
    metadata: dict[str, Any]


def as_paths(file_path: FilePaths) -> list[Path]:
    if isinstance(file_path, str | os.PathLike):
        return [Path(file_path)]
    return [Path(p) for p in file_path]


def make_client(client: Client | None, base_url: str | None, api_key: str | None, timeout: float) -> Client:
    return client if client is not None else Client(base_url, api_key, timeout=timeout)


def parsed(client: Client, paths: Sequence[Path], formats: Sequence[Format], *, mode: Mode | None,
           pages: str | None, timeout: float | None) -> Iterator[tuple[Path, str, dict[str, Any]]]:
    """(path, document id, {format: result}) per file, in order. Every file is submitted before the first is
    waited for, so the server parses them side by side; each is yielded as soon as it and those before it end."""
    submitted = [(path, client.submit(path, mode=mode, pages=pages).id) for path in paths]
    for path, document_id in submitted:
        state = client.wait(document_id, timeout=timeout)
        if state.status in ("failed", "cancelled"):
            raise DocumentFailed(Document(state))
        yield path, document_id, {fmt: client.result(document_id, fmt) for fmt in formats}


def _boxes(elements: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"element_id": e["id"], "type": e["type"], "page": e["page"], "bbox": e.get("bbox")} for e in elements]


def page_records(source: Path, document_id: str, body: dict[str, Any]) -> Iterator[Record]:
    """One record per parsed page (a failed page is skipped). `heading_path` is the headings in force where the
    page begins (titles, then headings by level, as the chunks count them), `headings` those on the page."""
    path: list[tuple[int, str]] = []
    for page in body["pages"]:
        start = [title for _, title in path]
        elements = page.get("elements") or []
        headings = []
        for element in elements:
            if element["type"] in ("title", "heading"):
                level = 0 if element["type"] == "title" else (element.get("level") or 2)
                while path and path[-1][0] >= level:
                    path.pop()
                path.append((level, element["text"]))
                headings.append(element["text"])
        if page["status"] != "succeeded" or not (page.get("markdown") or "").strip():
            continue
        yield Record(page["markdown"], {
            "source": str(source), "document_id": document_id, "page": page["page_number"],
            "heading_path": start, "headings": headings, "width": page.get("width"), "height": page.get("height"),
            "confidence": page.get("confidence"), "needs_review": bool(page.get("needs_review")),
            "boxes": _boxes([e for e in elements if e["type"] not in ("page_header", "page_footer")])})


def chunk_records(source: Path, document_id: str, body: dict[str, Any]) -> Iterator[Record]:
    """One record per chunk of the `chunks` result (cut along headings and within a token budget)."""
    for chunk in body["chunks"]:
        yield Record(chunk["text"], {
            "source": str(source), "document_id": document_id, "chunk_id": chunk["id"], "chunk_index": chunk["index"],
            "page": chunk["pages"][0] if chunk["pages"] else None, "pages": chunk["pages"],
            "heading_path": chunk["heading_path"], "tokens": chunk["tokens"], "boxes": chunk["boxes"],
            "confidence_min": chunk.get("confidence_min"), "confidence_mean": chunk.get("confidence_mean")})
