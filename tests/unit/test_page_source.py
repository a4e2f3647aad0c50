"""The worker's copy of a page out of its document's PDF: the page the split would have written, the PDF
downloaded once per process, the cache held to its budget."""

from __future__ import annotations

import hashlib

import pytest

from services.core.cache import _PDF_VOLATILE, page_fingerprint
from services.core.pdf import split_pdf
from services.core.storage import ObjectNotFound
from services.worker.page_source import SourceCache, in_document_pdf, page_file
from tests.harness import CORPUS
from tests.pdfs import make_pdf, text_pages

FONTS_PDF = CORPUS / "dev" / "docling_multi_page" / "multi_page.pdf"


class CountingStore:
    """The part of ObjectStore the page source uses: `get`, counted."""

    def __init__(self, objects: dict[str, bytes]) -> None:
        self.objects = objects
        self.gets: list[str] = []

    def get(self, key: str) -> bytes:
        self.gets.append(key)
        try:
            return self.objects[key]
        except KeyError as exc:
            raise ObjectNotFound(key) from exc


def test_a_page_copied_from_the_source_is_the_page_the_split_writes() -> None:
    pdf = text_pages(4)
    store = CountingStore({"documents/d1/source.pdf": pdf})
    cache = SourceCache(budget_bytes=1 << 20)
    copies = [cache.page(store, "documents/d1/source.pdf", number) for number in (1, 2, 3, 4)]  # type: ignore[arg-type]
    split = list(split_pdf(pdf, [1, 2, 3, 4]))
    # same page, same fingerprint: the result cache matches pages across the two ways of reading them
    assert [page_fingerprint(c) for c in copies] == [page_fingerprint(s) for s in split]
    assert store.gets == ["documents/d1/source.pdf"], "the PDF is downloaded once for all its pages"
    cache.clear()


def test_the_cache_keeps_to_its_budget_but_always_the_newest() -> None:
    small, other = text_pages(2), make_pdf(lines=["another document"])
    store = CountingStore({"documents/a/source.pdf": small, "documents/b/source.pdf": other})
    cache = SourceCache(budget_bytes=len(small) + 10)
    cache.page(store, "documents/a/source.pdf", 1)  # type: ignore[arg-type]
    cache.page(store, "documents/b/source.pdf", 1)  # type: ignore[arg-type]  # over the budget: `a` goes
    cache.page(store, "documents/b/source.pdf", 1)  # type: ignore[arg-type]
    cache.page(store, "documents/a/source.pdf", 2)  # type: ignore[arg-type]
    assert store.gets == ["documents/a/source.pdf", "documents/b/source.pdf", "documents/a/source.pdf"]
    tiny = SourceCache(budget_bytes=0)
    tiny.page(store, "documents/a/source.pdf", 1)  # type: ignore[arg-type]
    tiny.page(store, "documents/a/source.pdf", 2)  # type: ignore[arg-type]
    assert store.gets.count("documents/a/source.pdf") == 3, "the newest stays, whatever the budget"
    cache.clear()
    tiny.clear()


def test_a_page_with_a_file_of_its_own_is_fetched_whole() -> None:
    store = CountingStore({"documents/d2/pages/00003.pdf": b"%PDF-page", "documents/d2/source.png": b"png"})
    assert page_file(store, "d2", "documents/d2/pages/00003.pdf", 7, cache_mb=1) == b"%PDF-page"  # type: ignore[arg-type]
    assert page_file(store, "d2", "documents/d2/source.png", 1, cache_mb=1) == b"png"  # type: ignore[arg-type]
    assert in_document_pdf("documents/d2/source.pdf", "d2") and not in_document_pdf("documents/d3/source.pdf", "d2")
    with pytest.raises(ObjectNotFound):
        page_file(store, "d4", "documents/d4/source.pdf", 1, cache_mb=1)  # type: ignore[arg-type]


def whole_file_fingerprint(data: bytes) -> str:
    """The fingerprint as it was made before its search kept to the file's two ends."""
    return hashlib.sha256(_PDF_VOLATILE.sub(b"", data)).hexdigest()


def test_the_fingerprint_finds_the_volatile_fields_at_the_two_ends_as_the_whole_file_search_did() -> None:
    head = b"%PDF-1.7\n1 0 obj\n<</CreationDate(D:20261206061721+00'00')/Creator(PDFium)>>\nendobj\n"
    tail = b"trailer\n<</Size 7/ID[<AB12><AB12>]>>\n%%EOF"
    page = head + b"0 0 m 1 1 l S\n" * 1000 + tail  # larger than the two windows searched
    again = page.replace(b"AB12", b"CD34").replace(b"061721", b"170001")
    assert page_fingerprint(page) == page_fingerprint(again) == whole_file_fingerprint(page)
    assert page_fingerprint(page) != page_fingerprint(page.replace(b"1 1 l", b"2 2 l"))
    # a date inside the page's content is hashed: such a file misses the cache, it never matches another page
    inside = head + b"0 0 m 1 1 l S\n" * 500 + b"/ModDate(D:2026)" + b"0 0 m 1 1 l S\n" * 500 + tail
    assert page_fingerprint(inside) != page_fingerprint(inside.replace(b"D:2026", b"D:2027"))


@pytest.mark.skipif(not FONTS_PDF.is_file(), reason=f"the shared corpus is not at {CORPUS} (set PAGEMILL_CORPUS)")
def test_a_page_pdfium_copies_keeps_the_fingerprint_the_whole_file_search_made() -> None:
    """Its embedded fonts make each page larger than the two windows; earlier keys still match."""
    copies = list(split_pdf(FONTS_PDF.read_bytes(), [1, 2, 3]))
    assert all(len(copy) > 16_000 for copy in copies)
    for copy in copies:
        assert page_fingerprint(copy) == whole_file_fingerprint(copy)
