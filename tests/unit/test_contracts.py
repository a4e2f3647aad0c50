"""The wire contracts: generated code is fresh, payloads round-trip, unknown fields are refused."""

from __future__ import annotations

import filecmp
from pathlib import Path

import pytest
from google.protobuf.json_format import ParseError

from services.core.contracts import PageTask, from_dict, timestamp, to_dict
from services.core.contracts.generate import OUT_DIR, generate


def test_generated_code_is_fresh(tmp_path: Path) -> None:
    fresh = generate(tmp_path)
    assert fresh, "no proto files found"
    for path in fresh:
        committed = OUT_DIR / path.relative_to(tmp_path)
        assert committed.exists(), f"{committed} is missing: run `make proto`"
        assert filecmp.cmp(path, committed, shallow=False), f"{committed} is stale: run `make proto`"


def test_page_task_round_trip_and_strictness() -> None:
    task = PageTask(document_id="doc_1", page_index=4, source_key="documents/doc_1/pages/00004.pdf",
                    media_type="application/pdf", engine="cpu", mode="fast", enqueued_at=timestamp())
    payload = to_dict(task)
    assert from_dict(PageTask, payload) == task
    with pytest.raises(ParseError):
        from_dict(PageTask, {**payload, "pdf_bytes": "JVBERi0..."})  # bytes never travel on the queue
