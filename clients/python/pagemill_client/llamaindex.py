"""LlamaIndex: `PagemillReader`, a reader whose nodes are pagemill's retrieval chunks, linked to their document and
to each other (`pip install 'pagemill-client[llamaindex]'`).

    from pagemill_client.llamaindex import PagemillReader
    nodes = PagemillReader().load_data("report.pdf")
    index = VectorStoreIndex(nodes)   # the chunks as they are: no second splitting, relationships kept
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from llama_index.core.readers.base import BaseReader
from llama_index.core.schema import Document, NodeRelationship, ObjectType, RelatedNodeInfo

from pagemill_client._client import Client
from pagemill_client._models import Mode
from pagemill_client._rag import FilePaths, as_paths, chunk_records, make_client, parsed

__all__ = ["PagemillReader"]

# Kept on the node, left out of the text an embedding model or an LLM sees.
HIDDEN_METADATA = ["document_id", "chunk_id", "chunk_index", "boxes", "tokens", "pages", "source"]


class PagemillReader(BaseReader):
    """`load_data(file_path)` / `lazy_load_data(file_path)`: one node per chunk of pagemill's `chunks` result (cut
    along headings within a token budget), each a `Document` (LlamaIndex's `TextNode` with an id) with:

    - `id_`: `{document_id}:{chunk_id}`, stable for a document, so re-indexing it replaces rather than duplicates;
    - relationships: SOURCE (the pagemill document: its id and file name), PREVIOUS and NEXT (the chunks around it
      in reading order);
    - metadata: `page`, `pages`, `heading_path`, `boxes` (element id, type, page, `[x0, y0, x1, y1]` in PDF points,
      top-left origin), `source`, `document_id`, `chunk_id`, `chunk_index`, `tokens` (all but `page` and
      `heading_path` excluded from what embeddings and LLMs see), plus `extra_info`.

    `client` (a `pagemill_client.Client`) or `base_url` / `api_key` (default $PAGEMILL_BASE_URL, $PAGEMILL_API_KEY)
    say which pagemill; a failed file raises `DocumentFailed`."""

    def __init__(self, *, mode: Mode | None = None, pages: str | None = None, client: Client | None = None,
                 base_url: str | None = None, api_key: str | None = None, timeout: float | None = None) -> None:
        self.mode, self.pages, self.timeout = mode, pages, timeout
        self._client, self._base_url, self._api_key = client, base_url, api_key

    def lazy_load_data(self, file_path: FilePaths, extra_info: dict[str, Any] | None = None,
                       ) -> Iterator[Document]:
        client = make_client(self._client, self._base_url, self._api_key, timeout=60.0)
        try:
            for path, document_id, results in parsed(client, as_paths(file_path), ["chunks"], mode=self.mode,
                                                     pages=self.pages, timeout=self.timeout):
                yield from _nodes(document_id, path.name, list(chunk_records(path, document_id, results["chunks"])),
                                  extra_info or {})
        finally:
            if self._client is None:
                client.close()

    def load_data(self, file_path: FilePaths, extra_info: dict[str, Any] | None = None,
                  ) -> list[Document]:
        return list(self.lazy_load_data(file_path, extra_info))


def _nodes(document_id: str, filename: str, records: list[Any], extra_info: dict[str, Any]) -> Iterator[Document]:
    ids = [f"{document_id}:{record.metadata['chunk_id']}" for record in records]
    source = RelatedNodeInfo(node_id=document_id, node_type=ObjectType.DOCUMENT, metadata={"filename": filename})
    for n, record in enumerate(records):
        relationships = {NodeRelationship.SOURCE: source}
        if n > 0:
            relationships[NodeRelationship.PREVIOUS] = RelatedNodeInfo(node_id=ids[n - 1], node_type=ObjectType.TEXT)
        if n + 1 < len(records):
            relationships[NodeRelationship.NEXT] = RelatedNodeInfo(node_id=ids[n + 1], node_type=ObjectType.TEXT)
        yield Document(id_=ids[n], text=record.text, metadata={**extra_info, **record.metadata},
                       relationships=relationships, excluded_embed_metadata_keys=HIDDEN_METADATA,
                       excluded_llm_metadata_keys=HIDDEN_METADATA)
