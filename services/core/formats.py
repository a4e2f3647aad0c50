"""Office and web documents by their content: OOXML, ODF, EPUB, legacy OLE2, RTF, HTML and e-mail.

Detection reads the first bytes and, for ZIP containers, the central directory and the small `mimetype`
entry only — never a member's inflated body, so a ZIP bomb is recognised without being expanded. What the
names and the client's Content-Type claim is ignored.
"""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path

DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
ODT = "application/vnd.oasis.opendocument.text"
ODS = "application/vnd.oasis.opendocument.spreadsheet"
ODP = "application/vnd.oasis.opendocument.presentation"
EPUB = "application/epub+zip"
DOC = "application/msword"
XLS = "application/vnd.ms-excel"
PPT = "application/vnd.ms-powerpoint"
RTF = "application/rtf"
HTML = "text/html"
EML = "message/rfc822"

OFFICE_EXTENSIONS = {
    DOCX: ".docx", XLSX: ".xlsx", PPTX: ".pptx", ODT: ".odt", ODS: ".ods", ODP: ".odp", EPUB: ".epub",
    DOC: ".doc", XLS: ".xls", PPT: ".ppt", RTF: ".rtf", HTML: ".html", EML: ".eml",
}
OFFICE_TYPES = frozenset(OFFICE_EXTENSIONS)
# Read from their own structure by the worker, without LibreOffice (`PAGEMILL_CONVERT__NATIVE`).
NATIVE_TYPES = frozenset({DOCX, HTML, EPUB, EML})
SPREADSHEETS = frozenset({XLSX, ODS, XLS})

_OLE2 = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_ODF = {ODT.encode(): ODT, ODS.encode(): ODS, ODP.encode(): ODP, EPUB.encode(): EPUB}
_HTML_START = re.compile(rb"^\s*(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html|head|body|meta|title)\b",
                         re.IGNORECASE | re.DOTALL)
# RFC 5322 header fields an e-mail opens with; two of them on the first lines make an e-mail.
_MAIL_HEADER = re.compile(rb"^(?:From|To|Subject|Date|Received|Return-Path|Message-ID|MIME-Version|"
                          rb"Content-Type|Delivered-To|X-[A-Za-z-]+):[ \t]", re.IGNORECASE | re.MULTILINE)


def sniff_office(data: bytes | Path) -> str | None:
    """The media type of an office, web or e-mail document (bytes or a file), or None when it is none of them."""
    if isinstance(data, Path):
        with data.open("rb") as handle:
            head = handle.read(4096)
    else:
        head = data[:4096]
    if head[:4] == b"PK\x03\x04":
        return _zip_type(data)
    if head[:8] == _OLE2:
        return _ole2_type(data)
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if stripped[:5] == b"{\\rtf":
        return RTF
    if _HTML_START.match(stripped):
        return HTML
    if len(_MAIL_HEADER.findall(stripped[:2048])) >= 2 and _MAIL_HEADER.match(stripped):
        return EML
    return None


def plausible_office_head(head: bytes) -> bool:
    """Whether a file's first KiB may open an office, web or e-mail document (a ZIP or OLE2 container, RTF,
    HTML, mail headers): the streaming upload refuses anything else early; the whole file decides later."""
    if head[:4] == b"PK\x03\x04" or head[:8] == _OLE2:
        return True
    return sniff_office(head) is not None


def _zip_type(data: bytes | Path) -> str | None:
    try:
        archive = zipfile.ZipFile(data if isinstance(data, Path) else io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError):
        return None
    with archive:
        infos = archive.infolist()
        names = {info.filename for info in infos}
        # ODF and EPUB: a stored `mimetype` entry first, holding the type (read capped: it is a few bytes).
        if infos and infos[0].filename == "mimetype" and infos[0].file_size <= 128:
            try:
                with archive.open(infos[0]) as member:
                    declared = member.read(128).strip()
            except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError):
                declared = b""
            if declared in _ODF:
                return _ODF[declared]
        if "[Content_Types].xml" in names:
            if any(name.startswith("word/") for name in names):
                return DOCX
            if any(name.startswith("xl/") for name in names):
                return XLSX
            if any(name.startswith("ppt/") for name in names):
                return PPTX
    return None


def _ole2_type(data: bytes | Path) -> str | None:
    """Word, Excel or PowerPoint 97–2003 by the streams of the compound file (olefile reads the directory)."""
    import olefile

    try:
        with olefile.OleFileIO(str(data) if isinstance(data, Path) else io.BytesIO(data)) as ole:
            streams = {"/".join(entry).lower() for entry in ole.listdir()}
    except (OSError, ValueError, IndexError):
        return None
    if "worddocument" in streams:
        return DOC
    if "workbook" in streams or "book" in streams:
        return XLS
    if "powerpoint document" in streams:
        return PPT
    return None
