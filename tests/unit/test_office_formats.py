"""Office, web and e-mail documents are told by their content, and refused before conversion when hostile."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.core import formats
from services.core.errors import TooDeeplyNested, XmlEntities, ZipBomb
from services.worker.office.guard import GuardLimits, check_document
from tests import office_files
from tests.harness import CORPUS

OFFICE = CORPUS / "office"
EXPECTED = {".docx": formats.DOCX, ".pptx": formats.PPTX, ".xlsx": formats.XLSX, ".html": formats.HTML,
            ".eml": formats.EML, ".epub": formats.EPUB}


def office_sources() -> list[Path]:
    if not OFFICE.is_dir():
        return []
    return sorted(p for p in OFFICE.glob("*/*") if p.suffix in EXPECTED and not p.name.endswith(".docx.html"))


@pytest.mark.skipif(not OFFICE.is_dir(), reason=f"the shared corpus is not at {CORPUS} (set PAGEMILL_CORPUS)")
@pytest.mark.parametrize("path", office_sources(), ids=lambda p: p.name)
def test_every_office_sample_is_recognised_by_its_content(path: Path) -> None:
    assert formats.sniff_office(path.read_bytes()) == EXPECTED[path.suffix]


def test_pdfs_images_and_junk_are_not_office_documents() -> None:
    for data in (b"%PDF-1.7\n...", b"\x89PNG\r\n\x1a\n", b"PK\x03\x04not a zip", b"hello world", b"",
                 b"Subject only: no\n\nbody"):
        assert formats.sniff_office(data) is None
    assert formats.sniff_office(b"{\\rtf1\\ansi hello}") == formats.RTF
    assert formats.sniff_office(b"\xef\xbb\xbf  <!DOCTYPE html><html></html>") == formats.HTML
    assert formats.sniff_office(b"From: a@example.org\nTo: b@example.org\nSubject: hi\n\nbody") == formats.EML
    assert formats.sniff_office(office_files.plain_docx()) == formats.DOCX


def test_a_zip_bomb_is_refused_from_its_directory_without_inflating_it() -> None:
    bomb = office_files.zip_bomb_docx(inflated_mb=200)
    assert len(bomb) < 1 << 20
    with pytest.raises(ZipBomb):  # 200 MB from a few hundred KB: the ratio gives it away
        check_document(bomb, formats.DOCX)
    with pytest.raises(ZipBomb):  # and the total, whatever the ratio
        check_document(bomb, formats.DOCX, GuardLimits(max_expanded_bytes=100 << 20, max_ratio=10**9))


def test_entity_declarations_are_refused() -> None:
    for hostile in (office_files.billion_laughs_docx(), office_files.external_entity_docx()):
        with pytest.raises(XmlEntities):
            check_document(hostile, formats.DOCX)


def test_deep_nesting_is_refused_and_macros_are_reported() -> None:
    with pytest.raises(TooDeeplyNested):
        check_document(office_files.deeply_nested_html(5_000), formats.HTML)
    assert check_document(office_files.deeply_nested_html(50), formats.HTML).warnings == []
    assert check_document(office_files.macro_docx(), formats.DOCX).warnings == ["macros_ignored"]
    assert check_document(office_files.plain_docx(), formats.DOCX).warnings == []
