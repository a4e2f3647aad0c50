"""The worker's copy of a page out of its document's PDF: the page the split would have written, the PDF
downloaded once per process, the cache held to its budget."""

from __future__ import annotations

import pytest

from services.core.cache import page_fingerprint
from services.core.pdf import split_pdf
from services.core.storage import ObjectNotFound
from services.worker.page_source import SourceCache, in_document_pdf, page_file
from tests.pdfs import make_pdf, text_pages


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
