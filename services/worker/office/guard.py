"""Checks an office document must pass before a converter opens it: bombs, entities, nesting, macros.

Every check reads bounded amounts: the ZIP central directory (sizes as declared), at most `XML_HEAD_BYTES`
of each XML part (a DTD can only stand before the root element), and an HTML document streamed through a
tag counter. What is refused raises a typed `UnsafeDocument`; what is only worth saying (macros, embedded
objects) comes back as warnings — the converter runs with macros disabled either way.
"""

from __future__ import annotations

import io
import re
import zipfile
import zlib
from dataclasses import dataclass, field
from html.parser import HTMLParser

from services.core.errors import CorruptDocument, TooDeeplyNested, XmlEntities, ZipBomb
from services.core.formats import DOC, EPUB, HTML, ODP, ODS, ODT, PPT, XLS

XML_HEAD_BYTES = 64 * 1024
_ENTITY = re.compile(rb"<!ENTITY", re.IGNORECASE)
_XML_PART = re.compile(r"\.(?:xml|rels|opf|ncx|xhtml|html?|svg)$", re.IGNORECASE)
_ZIP_TYPES = frozenset({ODT, ODS, ODP, EPUB})
_OLE_TYPES = frozenset({DOC, XLS, PPT})


@dataclass(frozen=True, slots=True)
class GuardLimits:
    max_expanded_bytes: int = 1 << 30  # what all members of an archive may inflate to, together
    max_ratio: int = 200  # inflated / compressed, over the whole archive
    max_entries: int = 20_000
    max_depth: int = 256  # element nesting in HTML


@dataclass(slots=True)
class GuardReport:
    warnings: list[str] = field(default_factory=list)


def check_document(data: bytes, media_type: str, limits: GuardLimits | None = None) -> GuardReport:
    """Raises `UnsafeDocument` (or `CorruptDocument`) for a document no converter should open."""
    limits = limits or GuardLimits()
    report = GuardReport()
    if data[:4] == b"PK\x03\x04":
        _check_zip(data, limits, report)
    elif media_type in _OLE_TYPES:
        _check_ole(data, report)
    elif media_type == HTML:
        _check_html(data, limits)
    elif _ENTITY.search(data[:XML_HEAD_BYTES]):
        raise XmlEntities("the document declares XML entities")
    return report


def _check_zip(data: bytes, limits: GuardLimits, report: GuardReport) -> None:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise CorruptDocument(f"the archive cannot be read ({exc})") from exc
    with archive:
        infos = archive.infolist()
        if len(infos) > limits.max_entries:
            raise ZipBomb(f"the archive has {len(infos)} members; at most {limits.max_entries} are read")
        expanded = sum(info.file_size for info in infos)
        compressed = max(1, sum(info.compress_size for info in infos))
        if expanded > limits.max_expanded_bytes or expanded / compressed > limits.max_ratio:
            raise ZipBomb(f"the archive would expand to {expanded:,} bytes from {compressed:,}")
        names = [info.filename for info in infos]
        for info in infos:
            if _XML_PART.search(info.filename) and _ENTITY.search(_head(archive, info, limits)):
                raise XmlEntities(f"{info.filename} declares XML entities")
    lowered = [name.lower() for name in names]
    if any(name.endswith("vbaproject.bin") or name.startswith(("basic/", "scripts/")) for name in lowered):
        report.warnings.append("macros_ignored")
    if any("/embeddings/" in name or name.startswith("object ") for name in lowered):
        report.warnings.append("embedded_objects_as_images")


def _head(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limits: GuardLimits) -> bytes:
    """The first XML_HEAD_BYTES of a member, inflating no more than that (a declared size can lie)."""
    try:
        with archive.open(info) as member:
            return member.read(XML_HEAD_BYTES)
    except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError, zlib.error) as exc:
        raise CorruptDocument(f"{info.filename} cannot be read ({exc})") from exc


def _check_ole(data: bytes, report: GuardReport) -> None:
    import olefile

    try:
        with olefile.OleFileIO(io.BytesIO(data)) as ole:
            streams = {"/".join(entry).lower() for entry in ole.listdir()}
    except (OSError, ValueError, IndexError) as exc:
        raise CorruptDocument(f"the compound file cannot be read ({exc})") from exc
    if any(s.startswith(("macros", "_vba_project_cur")) or "/vba/" in s for s in streams):
        report.warnings.append("macros_ignored")
    if any(s.startswith("objectpool") for s in streams):
        report.warnings.append("embedded_objects_as_images")


_VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
                   "track", "wbr"})


class _Depth(HTMLParser):
    def __init__(self, limit: int) -> None:
        super().__init__(convert_charrefs=False)
        self.limit, self.open = limit, 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in _VOID:
            self.open += 1
            if self.open > self.limit:
                raise TooDeeplyNested(f"the HTML nests elements deeper than {self.limit} levels")

    def handle_endtag(self, tag: str) -> None:
        if tag not in _VOID:
            self.open = max(0, self.open - 1)

    def handle_decl(self, decl: str) -> None:
        if "<!ENTITY" in decl.upper() or "ENTITY" in decl.upper().split():
            raise XmlEntities("the HTML declares entities")


def _check_html(data: bytes, limits: GuardLimits) -> None:
    if _ENTITY.search(data[:XML_HEAD_BYTES]):
        raise XmlEntities("the HTML declares XML entities")
    parser = _Depth(limits.max_depth)
    text = data.decode("utf-8", errors="replace")
    for start in range(0, len(text), 65_536):
        parser.feed(text[start:start + 65_536])
    parser.close()
