"""LangChain: `PagemillLoader`, a document loader that parses files through pagemill (`pip install
'pagemill-client[langchain]'`).

    from pagemill_client.langchain import PagemillLoader
    docs = PagemillLoader("report.pdf", split="chunk").load()   # or .lazy_load(), one Document at a time
"""

from __future__ import annotations

from collections.abc import Iterator

from langchain_core.document_loaders import BaseLoader
from langchain_core.documents import Document

from pagemill_client._client import Client
from pagemill_client._models import Format, Mode
from pagemill_client._rag import FilePaths, Split, as_paths, chunk_records, make_client, page_records, parsed

__all__ = ["PagemillLoader"]


class PagemillLoader(BaseLoader):
    """One `Document` per page (`split="page"`: the page's Markdown) or per chunk (`split="chunk"`: pagemill's
    retrieval chunks, cut along headings within a token budget). Metadata: `source`, `document_id`, `page`,
    `heading_path`, `boxes` (each element's id, type, page and `[x0, y0, x1, y1]` in PDF points, top-left origin);
    per page also `headings`, `width`, `height`; per chunk also `chunk_id`, `chunk_index`, `pages`, `tokens`.

    Lazy: files are parsed when iteration starts (all submitted at once), and each file's Documents are yielded
    as soon as it is done. `client` (a `pagemill_client.Client`) or `base_url` / `api_key` (default
    $PAGEMILL_BASE_URL, $PAGEMILL_API_KEY) say which pagemill; a failed file raises `DocumentFailed`."""

    def __init__(self, file_path: FilePaths, *, split: Split = "page", mode: Mode | None = None,
                 pages: str | None = None, client: Client | None = None, base_url: str | None = None,
                 api_key: str | None = None, timeout: float | None = None) -> None:
        if split not in ("page", "chunk"):
            raise ValueError(f"split: 'page' or 'chunk', not {split!r}")
        self.paths, self.split, self.mode, self.pages, self.timeout = as_paths(file_path), split, mode, pages, timeout
        self._client, self._base_url, self._api_key = client, base_url, api_key

    def lazy_load(self) -> Iterator[Document]:
        client = make_client(self._client, self._base_url, self._api_key, timeout=60.0)
        fmt: Format = "json" if self.split == "page" else "chunks"
        try:
            for path, document_id, results in parsed(client, self.paths, [fmt], mode=self.mode, pages=self.pages,
                                                     timeout=self.timeout):
                records = page_records if self.split == "page" else chunk_records
                for record in records(path, document_id, results[fmt]):
                    yield Document(page_content=record.text, metadata=record.metadata)
        finally:
            if self._client is None:
                client.close()
