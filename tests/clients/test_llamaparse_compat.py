"""The real LlamaParse client (`llama-cloud-services`) against a running pagemill (gateway, Celery workers, the CPU
engine), changed in nothing but its base URL and key: `load_data` in markdown and text, `parse` with its JSON pages,
a 0-based `target_pages`, an option pagemill does not support refused, another tenant's job not found."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.harness import Platform

with warnings.catch_warnings():  # the package announces its successor (llama-cloud>=1.0) on import
    warnings.simplefilter("ignore", DeprecationWarning)
    from llama_cloud_services import LlamaParse
    from llama_cloud_services.parse.types import JobResult

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory, redis_server: str) -> Iterator[Platform]:
    workdir = tmp_path_factory.mktemp("llamaparse")
    platform = Platform(workdir=workdir, database_url=f"sqlite:///{workdir / 'pagemill.db'}",
                        redis_base_url=redis_server, engine="cpu")
    platform.start(concurrency=2)
    yield platform
    assert not platform.log_errors()
    platform.stop()


@pytest.fixture
def pdf(corpus: Path) -> Path:
    return corpus / "dev" / "docling_multi_page" / "multi_page.pdf"


def parser(platform: Platform, key: str | None = None, **options: object) -> LlamaParse:
    return LlamaParse(api_key=key or platform.api_key, base_url=platform.url, check_interval=1,
                      max_timeout=300, **options)


def headings(pdf: Path) -> list[str]:
    return [line.strip("# ").strip() for line in pdf.with_suffix(".md").read_text().splitlines()
            if line.startswith("#")]


def test_load_data_markdown_and_text(platform: Platform, pdf: Path) -> None:
    pages = parser(platform, result_type="markdown").load_data(str(pdf))
    # The client splits the Markdown at LlamaParse's page separator: one Document per page.
    assert len(pages) >= 2 and all(page.text.strip() for page in pages)
    markdown = "\n".join(page.text for page in pages)
    assert any(f"# {heading}" in markdown for heading in headings(pdf))
    (whole,) = parser(platform, result_type="text", split_by_page=False).load_data(str(pdf))
    assert whole.text.count("\n---\n") == len(pages) - 1
    assert any(heading in whole.text for heading in headings(pdf)) and "# " not in whole.text


def test_parse_json_pages_and_target_pages(platform: Platform, pdf: Path) -> None:
    result = parser(platform).parse(str(pdf))
    assert isinstance(result, JobResult)
    assert len(result.pages) >= 2 and [page.page for page in result.pages] == list(range(1, len(result.pages) + 1))
    items = [item for page in result.pages for item in page.items]
    assert any(item.type == "heading" and item.lvl for item in items)
    assert all(item.bBox is not None and item.bBox.w and item.bBox.h for item in items if item.value)
    documents = result.get_markdown_documents(split_by_page=True)
    assert [document.metadata["page_number"] for document in documents] == [page.page for page in result.pages]
    second = parser(platform, target_pages="1").parse(str(pdf))
    assert isinstance(second, JobResult)
    assert [page.page for page in second.pages] == [2]  # 0-based in LlamaParse, numbered from 1 in the file
    assert second.pages[0].md == result.pages[1].md


def test_an_unsupported_option_is_refused(platform: Platform, pdf: Path) -> None:
    with pytest.raises(Exception, match="unsupported_option") as raised:
        parser(platform, parse_mode="parse_page_with_agent", ignore_errors=False).load_data(str(pdf))
    assert "parse_mode" in str(raised.value)


def test_another_tenants_job_is_not_found(platform: Platform, pdf: Path) -> None:
    result = parser(platform).parse(str(pdf))
    assert isinstance(result, JobResult)
    other = platform.create_tenant("other")
    response = httpx.get(f"{platform.url}/api/parsing/job/{result.job_id}",
                         headers={"Authorization": f"Bearer {other.key}"})
    assert response.status_code == 404 and response.json()["code"] == "not_found"
    response = httpx.get(f"{platform.url}/api/parsing/job/{result.job_id}", headers={"Authorization": "Bearer no"})
    assert response.status_code == 401 and "detail" in response.json()
