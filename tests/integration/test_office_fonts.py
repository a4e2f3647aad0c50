"""The fonts of a conversion are the pinned ones (services/worker/office/fonts.py), whatever the host has.

A document asking for Arial, Times New Roman, Calibri or Cambria is laid out in the metric-compatible font, and a
font the host has beyond the pinned set is never used, even when the document asks for it by name: the host
font here is a copy of a pinned file renamed, put where fontconfig looks for a user's fonts. Before, the
conversion took whatever the host's fontconfig picked, and the words parsed back from an HTML table changed
with the fonts installed (issue 24).
"""

from __future__ import annotations

import ctypes
import re
import struct
from pathlib import Path

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
import pytest

from services.core.formats import DOCX
from services.worker.office import fonts
from services.worker.office.libreoffice import available, convert
from tests import office_files

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not available(), reason="LibreOffice is not installed (make office-tools)")]

HOST_FAMILY = "Pagemill Host Sans"
# The word each run of the document is written in, and the family it asks for.
ASKED = {"arialword": "Arial", "timesword": "Times New Roman", "calibriword": "Calibri", "cambriaword": "Cambria",
         "courierword": "Courier New", "georgiaword": "Georgia", "hostword": HOST_FAMILY}
EXPECTED = {"arialword": "LiberationSans", "timesword": "LiberationSerif", "calibriword": "Carlito",
            "cambriaword": "Caladea", "courierword": "LiberationMono", "georgiaword": "LiberationSerif",
            "hostword": "LiberationSans"}


def renamed_font(source: Path, family: str) -> bytes:
    """The TrueType file `source` with a new family name (name records 1, 4, 6, 16), as another font."""
    data = source.read_bytes()
    tables = struct.unpack(">H", data[4:6])[0]
    entry = next(12 + 16 * i for i in range(tables) if data[12 + 16 * i:16 + 16 * i] == b"name")
    postscript = family.replace(" ", "")
    records = []
    for platform, encoding, language in ((3, 1, 0x409), (1, 0, 0)):
        for name_id, text in ((1, family), (2, "Regular"), (4, family), (6, postscript), (16, family)):
            encoded = text.encode("utf-16-be" if platform == 3 else "latin-1")
            records.append((platform, encoding, language, name_id, encoded))
    records.sort(key=lambda r: r[:4])
    strings = b""
    header = struct.pack(">HHH", 0, len(records), 6 + 12 * len(records))
    for platform, encoding, language, name_id, encoded in records:
        header += struct.pack(">HHHHHH", platform, encoding, language, name_id, len(encoded), len(strings))
        strings += encoded
    table = header + strings
    offset = len(data) + (-len(data) % 4)
    directory = data[entry:entry + 4] + struct.pack(">III", 0, offset, len(table))
    return data[:entry] + directory + data[entry + 16:].ljust(offset - entry - 16, b"\0") + table


def font_of_each_word(pdf: bytes) -> dict[str, str]:
    """Each word of the PDF's text layer and the base font its first letter is drawn in (no subset tag, no
    "-Regular")."""
    document = pdfium.PdfDocument(pdf)
    found: dict[str, str] = {}
    buffer = ctypes.create_string_buffer(256)
    for page in document:
        textpage = page.get_textpage()
        text = textpage.get_text_range()
        for match in re.finditer(r"\w+", text):
            length = pdfium_c.FPDFText_GetFontInfo(textpage.raw, match.start(), buffer, 256, None)
            name = buffer.raw[:max(0, length - 1)].decode("latin-1")
            found[match.group()] = name.split("+", 1)[-1].removesuffix("-Regular")
    return found


def asking_docx() -> bytes:
    body = b"".join(
        f'<w:p><w:r><w:rPr><w:rFonts w:ascii="{family}" w:hAnsi="{family}" w:cs="{family}"/></w:rPr>'
        f"<w:t>{word} in {family.replace(' ', '')}</w:t></w:r></w:p>".encode() for word, family in ASKED.items())
    return office_files.docx(office_files._document(body))


def test_the_pinned_fonts_are_installed() -> None:
    # make office-tools installs them with LibreOffice: without them the conversions fall back to the host's.
    assert fonts.missing_packages() == [], "make office-tools"


def test_a_conversion_uses_the_pinned_fonts_and_never_one_the_host_has_beyond_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "fonts").mkdir()
    (tmp_path / "fonts" / "PagemillHostSans.ttf").write_bytes(
        renamed_font(Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"), HOST_FAMILY))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))  # a user's fonts: fontconfig's <dir prefix="xdg">
    used = font_of_each_word(convert(asking_docx(), DOCX, timeout_s=120, memory_mb=2048))
    assert {word: used.get(word) for word in ASKED} == EXPECTED
