"""An EPUB book as one HTML document: its spine's XHTML chapters in reading order (LibreOffice reads no EPUB)."""

from __future__ import annotations

import io
import posixpath
import re
import zipfile
from xml.etree import ElementTree

from services.core.errors import CorruptDocument

_BODY = re.compile(rb"<body[^>]*>(.*?)</body\s*>", re.IGNORECASE | re.DOTALL)
_SCRIPT = re.compile(rb"<script\b.*?</script\s*>", re.IGNORECASE | re.DOTALL)
_CONTAINER_NS = {"c": "urn:oasis:names:tc:opendocument:xmlns:container"}
_OPF_NS = {"opf": "http://www.idpf.org/2007/opf"}
MAX_CHAPTER_BYTES = 32 << 20


def epub_to_html(data: bytes) -> bytes:
    """The chapters' bodies as one HTML document, a page break before each (what LibreOffice converts)."""
    chapters: list[bytes] = []
    for chapter in epub_chapters(data):
        body = _BODY.search(chapter)
        chapters.append(_SCRIPT.sub(b"", body.group(1) if body else chapter))
    return (b'<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>'
            + b'<hr style="page-break-before: always">'.join(chapters) + b"</body></html>")


def epub_chapters(data: bytes) -> list[bytes]:
    """The spine's XHTML documents in reading order. Raises `CorruptDocument` for an unreadable book."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        with archive:
            container = ElementTree.fromstring(archive.read("META-INF/container.xml"))
            rootfile = container.find(".//c:rootfile", _CONTAINER_NS)
            if rootfile is None or not rootfile.get("full-path"):
                raise CorruptDocument("the EPUB names no package document")
            opf_path = rootfile.get("full-path", "")
            package = ElementTree.fromstring(archive.read(opf_path))
            base = posixpath.dirname(opf_path)
            items = {item.get("id"): item.get("href") for item in package.iterfind(".//opf:manifest/opf:item", _OPF_NS)}
            chapters: list[bytes] = []
            for ref in package.iterfind(".//opf:spine/opf:itemref", _OPF_NS):
                href = items.get(ref.get("idref"))
                if not href:
                    continue
                info = archive.getinfo(posixpath.normpath(posixpath.join(base, href)))
                if info.file_size > MAX_CHAPTER_BYTES:
                    raise CorruptDocument(f"the EPUB chapter {href} is larger than {MAX_CHAPTER_BYTES >> 20} MiB")
                chapters.append(archive.read(info))
    except (KeyError, zipfile.BadZipFile, ElementTree.ParseError, OSError, ValueError) as exc:
        raise CorruptDocument(f"the EPUB cannot be read ({exc})") from exc
    if not chapters:
        raise CorruptDocument("the EPUB has no chapters in its spine")
    return chapters
