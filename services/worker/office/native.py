"""Word, HTML, EPUB and e-mail documents read from their own structure into one element tree, no rendering.

    docx ─▶ docx.read_docx (the OOXML body)           html ─▶ web.read_html (the DOM)
    epub ─▶ its spine's XHTML chapters, each read as HTML, in order
    eml  ─▶ mail.read_mail's page (headers, the HTML or text body, the attachments listed) read as HTML; the
            attachments themselves become child documents as before

These formats have no pages of their own: the whole document is one page, page 1, and its elements have no
box (docs/office.md). `NATIVE_TYPES` are the media types read this way; the rest of the office formats (and
any of these a native reader refuses) go through LibreOffice.
"""

from __future__ import annotations

from services.core.elements import Element, ElementType, renumber
from services.core.formats import DOCX, EML, EPUB, HTML, NATIVE_TYPES
from services.worker.office.docx import read_docx
from services.worker.office.epub import epub_chapters
from services.worker.office.mail import Attachment, read_mail
from services.worker.office.web import read_html

__all__ = ["NATIVE_TYPES", "read_native"]


def read_native(data: bytes, media_type: str) -> tuple[list[Element], list[Attachment]]:
    """The document's elements (on page 1, no boxes) and an e-mail's attachments. Raises `CorruptDocument`
    when the reader cannot make sense of the file (the caller then converts it with LibreOffice)."""
    if media_type == DOCX:
        return read_docx(data), []
    if media_type == HTML:
        return read_html(data), []
    if media_type == EPUB:
        elements = [e for chapter in epub_chapters(data) for e in read_html(chapter, title_heading=False)]
        return renumber(_one_title(elements), 1), []
    if media_type == EML:
        mail = read_mail(data)
        return read_html(mail.html), mail.attachments
    raise ValueError(f"{media_type} has no native reader")


def _one_title(elements: list[Element]) -> list[Element]:
    """The book's first title stays its title; each chapter's own is a heading of level 1."""
    first = next((i for i, e in enumerate(elements) if e.type == ElementType.TITLE), None)
    return [e.model_copy(update={"type": ElementType.HEADING}) if e.type == ElementType.TITLE and i != first else e
            for i, e in enumerate(elements)]
