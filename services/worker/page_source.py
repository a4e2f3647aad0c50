"""A page's file for its engine: the object the split wrote for it, or its page copied out of the document's PDF.

A PDF up to `worker.page_files_over_mb` is not split into a file per page: its pages name the document's PDF
(`documents/{id}/source.pdf`), and the claim says which page of it each is. Each worker process keeps the PDFs
it read last, open (`worker.source_cache_mb`), so the pages of a chunk, and the next chunks of the same
document this process takes, download and parse it once. The copy is the single-page PDF the split would have
written, so engines, the result cache's fingerprint and the page's output are the same either way.
"""

from __future__ import annotations

import atexit
from collections import OrderedDict
from dataclasses import dataclass

import pypdfium2 as pdfium

from services.core.pdf import PDFIUM_LOCK, copy_page, open_pdf
from services.core.storage import ObjectStore, in_document_pdf


@dataclass(slots=True)
class _Source:
    document: pdfium.PdfDocument
    size: int


class SourceCache:
    """Open PDFs by object key, least recently used out first, within a budget of bytes (the newest always
    stays). Every use of an open document is under `PDFIUM_LOCK`, so a thread never meets one closed."""

    def __init__(self, budget_bytes: int) -> None:
        self.budget_bytes = budget_bytes
        self._open: OrderedDict[str, _Source] = OrderedDict()
        self.downloads = 0

    def page(self, store: ObjectStore, key: str, number: int) -> bytes:
        """Page `number` (1-based) of the PDF stored under `key`, as a single-page PDF."""
        with PDFIUM_LOCK:
            source = self._open.get(key)
            if source is not None:
                self._open.move_to_end(key)
                return copy_page(source.document, number)
        data = store.get(key)  # outside the lock: another thread's pages go on meanwhile
        self.downloads += 1
        with PDFIUM_LOCK:
            source = self._open.get(key)
            if source is None:  # not opened by another thread meanwhile
                source = self._open[key] = _Source(open_pdf(data), len(data))
                self._evict()
            return copy_page(source.document, number)

    def _evict(self) -> None:
        used = sum(source.size for source in self._open.values())
        while len(self._open) > 1 and used > self.budget_bytes:
            _, oldest = self._open.popitem(last=False)
            used -= oldest.size
            oldest.document.close()

    def clear(self) -> None:
        with PDFIUM_LOCK:
            for source in self._open.values():
                source.document.close()
            self._open.clear()


_cache: SourceCache | None = None


def page_file(store: ObjectStore, document_id: str, key: str, page_number: int, *, cache_mb: float) -> bytes:
    """A page's bytes: its own file, or page `page_number` (1-based) copied out of its document's PDF."""
    global _cache
    if not in_document_pdf(key, document_id):
        return store.get(key)
    if _cache is None:
        _cache = SourceCache(int(cache_mb * 1024 * 1024))
        atexit.register(_cache.clear)  # closed before pdfium is torn down (else it warns of each one still open)
    return _cache.page(store, key, page_number)
