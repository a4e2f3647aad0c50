"""The hostile or broken files of the shared corpus that the gateway refuses at upload, each with its
documented error code (tests/integration/test_bad_inputs.py parses the rest with real workers)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.api.conftest import Api, error_of

# case: what a customer gets at upload
REJECTED = {
    "encrypted_docling_2206.01062_pg3": (422, "encrypted_pdf"),
    "encrypted_pypdf_r6-user-password": (422, "encrypted_pdf"),
    "empty_pdfplumber_empty": (422, "empty_document"),
    "notpdf_unstructured_failing-invalid": (415, "unsupported_media_type"),
    "corrupt_ocrmypdf_invalid": (422, "corrupt_document"),
    "truncated_pdfjs_bug1020226": (422, "corrupt_document"),
    "corrupt_samplefiles_unreadablemetadata": (422, "corrupt_document"),
    "fuzzed_qpdf_bad-content": (415, "unsupported_media_type"),  # no PDF header where readers look for one
    "zeropages_qpdf_empty": (422, "empty_document"),
    "zeropages_unstructured_failing-missing-pages": (422, "empty_document"),
}


def case_file(corpus: Path, case: str) -> Path:
    """The case's document: its PDF, else its one other file."""
    folder = corpus / "bad" / case
    files = [f for f in folder.iterdir() if f.suffix == ".pdf"] or \
        [f for f in folder.iterdir() if f.is_file() and f.name != "README.md"]
    return files[0]


@pytest.mark.parametrize("database_url", ["sqlite_url"], indirect=True)  # validation needs no second database
def test_every_refused_bad_file_gets_its_documented_error(api: Api, corpus: Path) -> None:
    with api.client() as client:
        for case, expected in REJECTED.items():
            path = case_file(corpus, case)
            response = client.post("/v1/documents", files={"file": (path.name, path.read_bytes())})
            assert error_of(response) == expected, (case, response.text)
            assert response.json()["error"]["message"], case
        assert client.get("/v1/documents").json()["data"] == []
        assert client.get("/healthz").json() == {"status": "ok"}
