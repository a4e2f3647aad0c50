"""Hostile office files, made here: a ZIP bomb, entity expansion, an external entity, a macro, deep nesting."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

_CONTENT_TYPES = (b'<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/'
                  b'2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package'
                  b'.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override '
                  b'PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.'
                  b'wordprocessingml.document.main+xml"/></Types>')
_RELS = (b'<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/'
         b'relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
         b'relationships/officeDocument" Target="word/document.xml"/></Relationships>')
_W = b'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'


def _document(body: bytes, prolog: bytes = b"") -> bytes:
    return (b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>' + prolog + b"<w:document " + _W
            + b"><w:body>" + body + b"</w:body></w:document>")


def _paragraph(text: str) -> bytes:
    return f"<w:p><w:r><w:t>{text}</w:t></w:r></w:p>".encode()


def docx(document_xml: bytes, extra: dict[str, bytes] | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", _CONTENT_TYPES)
        archive.writestr("_rels/.rels", _RELS)
        archive.writestr("word/document.xml", document_xml)
        for name, data in (extra or {}).items():
            archive.writestr(name, data)
    return buffer.getvalue()


def plain_docx(text: str = "The quick brown fox jumps over the lazy dog") -> bytes:
    return docx(_document(_paragraph(text)))


def zip_bomb_docx(inflated_mb: int = 2048) -> bytes:
    """A valid DOCX with one member that inflates to `inflated_mb` of zeros (a few MB on disk)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", _CONTENT_TYPES)
        archive.writestr("_rels/.rels", _RELS)
        archive.writestr("word/document.xml", _document(_paragraph("bomb")))
        with archive.open("word/media/zeros.bin", "w", force_zip64=True) as member:
            chunk = bytes(1 << 20)
            for _ in range(inflated_mb):
                member.write(chunk)
    return buffer.getvalue()


def billion_laughs_docx() -> bytes:
    prolog = (b'<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">'
              b'<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">'
              b'<!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">]>')
    return docx(_document(b"<w:p><w:r><w:t>&lol4;</w:t></w:r></w:p>", prolog))


def external_entity_docx() -> bytes:
    prolog = b'<!DOCTYPE doc [<!ENTITY secret SYSTEM "file:///etc/passwd">]>'
    return docx(_document(b"<w:p><w:r><w:t>&secret;</w:t></w:r></w:p>", prolog))


def macro_docx() -> bytes:
    """A macro-enabled document (a vbaProject part): converted with macros disabled, and said so."""
    return docx(_document(_paragraph("Quarterly figures with a macro")), {"word/vbaProject.bin": b"\xd0\xcf\x11\xe0"})


def deeply_nested_html(depth: int = 100_000) -> bytes:
    return b"<!DOCTYPE html><html><body>" + b"<div>" * depth + b"deep" + b"</div>" * depth + b"</body></html>"


def write(folder: Path, name: str, data: bytes) -> Path:
    path = folder / name
    path.write_bytes(data)
    return path
