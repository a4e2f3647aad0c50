"""The whole path on real parts: HTTP upload → Redis → Celery workers → engine → S3 → assembled Markdown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import PlatformFactory
from tests.textmatch import word_recall

pytestmark = pytest.mark.slow

CASES = [
    # (case folder, input file, ground-truth file, minimum share of ground-truth words found)
    ("docling_multi_page", "multi_page.pdf", "multi_page.md", 0.9),  # digital, 5 pages
    ("docling_ocr_test", "ocr_test.pdf", "ocr_test.tesseract.full_page.md", 0.9),  # scanned PDF
    ("tesseract_phototest", "phototest.tif", "phototest.txt", 0.9),  # TIFF image
    ("docling_webp-test", "webp-test.webp", "webp-test.tesseract.full_page.md", 0.9),  # WebP image
]


def test_corpus_documents_end_to_end_on_postgres_and_s3(platform_factory: PlatformFactory, postgres_url: str,
                                                         s3_endpoint: str, corpus: Path) -> None:
    platform = platform_factory(postgres_url, s3_endpoint=s3_endpoint).start()
    uploaded = []
    for case, name, _, _ in CASES:
        created = platform.upload(corpus / "dev" / case / name, metadata=json.dumps({"case": case}))
        assert created["status"] == "queued" and created["status_url"].endswith(created["id"])
        uploaded.append(created)
    for created, (case, _, truth_name, minimum) in zip(uploaded, CASES, strict=True):
        state = platform.wait_done(created["id"])
        assert state["status"] == "succeeded", state
        assert state["pages_done"] == state["pages_total"] == created["pages_total"]
        markdown = platform.result(created["id"])
        truth = (corpus / "dev" / case / truth_name).read_text()
        assert word_recall(truth, markdown) >= minimum, (case, markdown[:500])
        document = platform.result(created["id"], "json")
        assert document["metadata"] == {"case": case}
        assert [p["page_number"] for p in document["pages"]] == list(range(1, created["pages_total"] + 1))
        assert all(p["engine"] == "cpu" and p["status"] == "succeeded" for p in document["pages"])
        # Every page has its element tree, boxed in its own points, numbered after its page.
        for page in document["pages"]:
            assert page["width"] > 0 and page["height"] > 0 and page["elements"], page
            assert all(e["page"] == page["page_number"] and e["id"].startswith(f"p{page['page_number']}-e")
                       for e in page["elements"])
            assert all(0 <= e["bbox"][0] < e["bbox"][2] <= page["width"] + 1 for e in page["elements"])
    # The objects really live in the S3 API, under derived keys.
    import boto3

    s3 = boto3.client("s3", endpoint_url=s3_endpoint, aws_access_key_id="testing",
                      aws_secret_access_key="testing", region_name="us-east-1")
    keys = {o["Key"] for o in s3.list_objects_v2(Bucket=platform.bucket)["Contents"]}
    first = uploaded[0]["id"]
    assert {f"documents/{first}/{name}" for name in ("document.md", "document.json", "source.pdf")} <= keys
    # the page results, in an object per page or per pages of a chunk that ended together
    assert any(k.startswith(f"documents/{first}/pages/") and k.endswith(".json") for k in keys), keys
    # a small PDF is not written out page by page: the workers copy its pages out of the source
    assert f"documents/{first}/pages/00004.pdf" not in keys
