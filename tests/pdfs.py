"""Building test PDFs out of real corpus pages (pdfium's page import, no synthetic drawing)."""

from __future__ import annotations

import io
from pathlib import Path

import pypdfium2 as pdfium


def repeat_pages(source: Path, pages: int) -> bytes:
    """A PDF of `pages` pages, cycling through the pages of `source`."""
    src = pdfium.PdfDocument(source.read_bytes())
    out = pdfium.PdfDocument.new()
    count = len(src)
    out.import_pages(src, [i % count for i in range(pages)])  # one import: pages share fonts and images
    buffer = io.BytesIO()
    out.save(buffer)
    out.close()
    src.close()
    return buffer.getvalue()


def select_pages(source: Path, numbers: list[int]) -> bytes:
    """A PDF made of the given 1-based pages of `source`, in that order."""
    src = pdfium.PdfDocument(source.read_bytes())
    out = pdfium.PdfDocument.new()
    out.import_pages(src, [n - 1 for n in numbers])
    buffer = io.BytesIO()
    out.save(buffer)
    out.close()
    src.close()
    return buffer.getvalue()
