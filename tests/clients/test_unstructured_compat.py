"""The real `unstructured-client` SDK against a running pagemill (gateway, Celery workers, the CPU engine), changed
in nothing but its server URL and key: it partitions a corpus PDF (the client splits it into page ranges itself,
so the pages come back numbered through `starting_page_number`), and pagemill's refusals reach it in its own
error types."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from unstructured_client import UnstructuredClient
from unstructured_client.models import errors, operations, shared

from tests.harness import Platform

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory, redis_server: str) -> Iterator[Platform]:
    workdir = tmp_path_factory.mktemp("unstructured")
    platform = Platform(workdir=workdir, database_url=f"sqlite:///{workdir / 'pagemill.db'}",
                        redis_base_url=redis_server, engine="cpu")
    platform.start(concurrency=2)
    yield platform
    assert not platform.log_errors()
    platform.stop()


@pytest.fixture
def pdf(corpus: Path) -> Path:
    return corpus / "dev" / "docling_multi_page" / "multi_page.pdf"


def client(platform: Platform, key: str | None = None) -> UnstructuredClient:
    return UnstructuredClient(api_key_auth=key or platform.api_key, server_url=platform.url)


def partition(sdk: UnstructuredClient, pdf: Path, **parameters: Any) -> list[dict[str, Any]]:
    files = shared.Files(content=pdf.read_bytes(), file_name=pdf.name)
    response = sdk.general.partition(request=operations.PartitionRequest(
        partition_parameters=shared.PartitionParameters(files=files, **parameters)))
    assert response.elements is not None
    return response.elements


def test_partition_through_the_real_client(platform: Platform, pdf: Path) -> None:
    elements = partition(client(platform), pdf, strategy=shared.Strategy.FAST, coordinates=True, languages=["eng"])
    assert elements
    pages = httpx.get(f"{platform.url}/v1/documents", headers={"Authorization": f"Bearer {platform.api_key}"},
                      params={"limit": 10}).json()["data"]
    # The client split the PDF: each range is a document of its own, numbered from its starting page.
    assert len(pages) >= 2
    total = sum(document["pages_total"] for document in pages)
    numbers = sorted({element["metadata"]["page_number"] for element in elements})
    assert numbers == list(range(1, total + 1))
    text = " ".join(element["text"] for element in elements)
    expected = [line.strip("# ").strip() for line in (pdf.with_suffix(".md")).read_text().splitlines()
                if line.startswith("#")]
    assert expected and any(heading in text for heading in expected)
    titles = [element for element in elements if element["type"] == "Title"]
    assert titles and all("category_depth" in element["metadata"] for element in titles)
    for element in elements:
        metadata = element["metadata"]
        assert len(element["element_id"]) == 32
        assert metadata["filename"] == pdf.name and metadata["languages"] == ["eng"]
        if "coordinates" in metadata:
            (x0, y0), _, (x1, y1), _ = metadata["coordinates"]["points"]
            assert 0 <= x0 < x1 <= metadata["coordinates"]["layout_width"]
            assert 0 <= y0 < y1 <= metadata["coordinates"]["layout_height"]
    assert any("coordinates" in element["metadata"] for element in elements)
    parents = {element["metadata"].get("parent_id") for element in elements} - {None}
    assert parents <= {element["element_id"] for element in titles}


def test_a_table_has_its_html(platform: Platform, corpus: Path) -> None:
    table_pdf = corpus / "dev" / "pubtabnet_PMC1626454_002_00"
    path = next(table_pdf.glob("*.png"))
    elements = partition(client(platform), path, strategy=shared.Strategy.FAST)
    tables = [element for element in elements if element["type"] == "Table"]
    assert tables and tables[0]["metadata"]["text_as_html"].startswith("<table")


def test_unsupported_options_are_refused_in_their_shape(platform: Platform, pdf: Path) -> None:
    with pytest.raises(errors.SDKError) as raised:
        partition(client(platform), pdf, chunking_strategy="by_title", split_pdf_page=False)
    assert raised.value.status_code == 400
    body = raised.value.raw_response.json()
    assert body["code"] == "unsupported_option" and "chunking_strategy" in body["detail"]
    with pytest.raises(errors.SDKError) as raised:
        partition(client(platform), pdf, strategy="ocr_only", split_pdf_page=False)
    assert raised.value.status_code == 400 and "strategy" in raised.value.raw_response.json()["detail"]


def test_a_wrong_key_is_refused(platform: Platform, pdf: Path) -> None:
    with pytest.raises(errors.SDKError) as raised:
        partition(client(platform, key="pm_not_a_key"), pdf, split_pdf_page=False)
    assert raised.value.status_code == 401
    assert raised.value.raw_response.json()["code"] == "unauthorized"


def test_langchain_unstructured_loader(platform: Platform, pdf: Path) -> None:
    """LangChain's loader over the same client (`langchain-unstructured`, the successor of langchain-community's
    `UnstructuredAPIFileLoader`, which needs the whole `unstructured` library): one Document per element."""
    from langchain_unstructured import UnstructuredLoader

    loader = UnstructuredLoader(file_path=str(pdf), partition_via_api=True, url=platform.url,
                                api_key=platform.api_key, strategy="fast")
    documents = list(loader.lazy_load())
    assert documents and all(document.page_content for document in documents)
    assert {document.metadata["category"] for document in documents} >= {"Title", "NarrativeText"}
    assert min(document.metadata["page_number"] for document in documents) == 1
    assert all(document.metadata["source"] == str(pdf) for document in documents)
