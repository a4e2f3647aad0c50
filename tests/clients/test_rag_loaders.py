"""The SDK's LangChain loader and LlamaIndex reader, with the real packages, against a running pagemill (gateway,
Celery workers, Redis, SQLite): Documents per page and per chunk with page, heading path and boxes, lazily; nodes
from pagemill's chunks with their relationships, indexed and retrieved by LlamaIndex itself."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pagemill_client import Client

from tests.harness import Platform

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory, redis_server: str) -> Iterator[Platform]:
    workdir = tmp_path_factory.mktemp("rag")
    platform = Platform(workdir=workdir, database_url=f"sqlite:///{workdir / 'pagemill.db'}",
                        redis_base_url=redis_server, engine="cpu",  # its element trees carry boxes
                        extra_env={"PAGEMILL_OUTPUTS__CHUNK_MAX_TOKENS": "64"})  # several chunks per page
    platform.start(concurrency=2)
    yield platform
    platform.stop()


@pytest.fixture
def pdf(corpus: Path) -> Path:
    return corpus / "dev" / "docling_multi_page" / "multi_page.pdf"


def documents_of(platform: Platform) -> int:
    with platform.client() as client:
        return len(client.get("/v1/documents", params={"limit": 200}).json()["data"])


def test_langchain_loader_yields_a_document_per_page_lazily(platform: Platform, pdf: Path) -> None:
    from langchain_core.document_loaders import BaseLoader
    from pagemill_client.langchain import PagemillLoader

    before = documents_of(platform)
    with Client(platform.url, platform.api_key) as client:
        loader = PagemillLoader(pdf, pages="1-3", client=client)
        assert isinstance(loader, BaseLoader)
        lazy = loader.lazy_load()
        assert inspect.isgenerator(lazy) and documents_of(platform) == before  # nothing is sent until iterated
        docs = list(lazy)
    assert documents_of(platform) == before + 1
    assert [d.metadata["page"] for d in docs] == [1, 2, 3]
    for doc in docs:
        page = doc.metadata["page"]
        assert doc.page_content.strip() and doc.metadata["source"] == str(pdf)
        assert doc.metadata["document_id"].startswith("doc_")
        assert doc.metadata["boxes"] and all(box["page"] == page for box in doc.metadata["boxes"])
        assert all(len(box["bbox"]) == 4 for box in doc.metadata["boxes"] if box["bbox"] is not None)
    # the headings in force where each page begins: what the pages before it opened
    assert docs[0].metadata["heading_path"] == [] and docs[0].metadata["headings"]
    assert docs[1].metadata["heading_path"] == docs[0].metadata["headings"][-1:]


def test_langchain_loader_by_chunk_into_a_vector_store(platform: Platform, pdf: Path, corpus: Path) -> None:
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.vectorstores import InMemoryVectorStore
    from pagemill_client.langchain import PagemillLoader

    other = corpus / "dev" / "docling_normal_4pages" / "normal_4pages.pdf"
    docs = PagemillLoader([pdf, other], split="chunk", pages="1-2", base_url=platform.url,
                          api_key=platform.api_key).load()
    sources = [d.metadata["source"] for d in docs]
    assert sources == sorted(sources, key=[str(pdf), str(other)].index) and set(sources) == {str(pdf), str(other)}
    first = [d for d in docs if d.metadata["source"] == str(pdf)]
    assert [d.metadata["chunk_index"] for d in first] == list(range(len(first))) and len(first) > 2
    assert {p for d in first for p in d.metadata["pages"]} == {1, 2}
    assert all(d.metadata["tokens"] <= 64 or len(d.metadata["boxes"]) == 1 for d in first)
    assert any(d.metadata["heading_path"] for d in first)
    store = InMemoryVectorStore.from_documents(docs, DeterministicFakeEmbedding(size=16))
    (found,) = store.similarity_search(first[1].page_content, k=1)
    assert found.page_content == first[1].page_content and found.metadata["chunk_id"] == first[1].metadata["chunk_id"]


def test_llamaindex_reader_gives_linked_chunk_nodes(platform: Platform, pdf: Path) -> None:
    from llama_index.core import VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.readers.base import BaseReader
    from llama_index.core.schema import MetadataMode, NodeRelationship
    from pagemill_client.llamaindex import PagemillReader

    reader = PagemillReader(pages="1-2", base_url=platform.url, api_key=platform.api_key)
    assert isinstance(reader, BaseReader)
    nodes = reader.load_data(pdf, extra_info={"collection": "tests"})
    assert len(nodes) > 2
    document_id = nodes[0].metadata["document_id"]
    with httpx.Client(base_url=platform.url, headers={"Authorization": f"Bearer {platform.api_key}"}) as http:
        chunks = http.get(f"/v1/documents/{document_id}/result", params={"format": "chunks"}).json()["chunks"]
    assert [n.text for n in nodes] == [c["text"] for c in chunks]
    assert [n.node_id for n in nodes] == [f"{document_id}:{c['id']}" for c in chunks]
    for n, node in enumerate(nodes):
        assert node.source_node is not None and node.source_node.node_id == document_id
        assert node.source_node.metadata == {"filename": pdf.name}
        assert (node.prev_node.node_id if node.prev_node else None) == (nodes[n - 1].node_id if n else None)
        assert (node.next_node.node_id if node.next_node else None) == (
            nodes[n + 1].node_id if n + 1 < len(nodes) else None)
        assert node.metadata["collection"] == "tests" and node.metadata["page"] in (1, 2)
        # the boxes stay on the node, out of what the embedding model reads
        assert node.metadata["boxes"] and "boxes" not in node.get_content(MetadataMode.EMBED)
        assert "heading_path" in node.get_content(MetadataMode.EMBED)
    index = VectorStoreIndex(nodes, embed_model=MockEmbedding(embed_dim=8))
    retrieved = index.as_retriever(similarity_top_k=len(nodes)).retrieve(nodes[1].text)
    by_id = {hit.node.node_id: hit.node for hit in retrieved}
    assert set(by_id) == {n.node_id for n in nodes}
    assert by_id[nodes[1].node_id].relationships[NodeRelationship.PREVIOUS].node_id == nodes[0].node_id
