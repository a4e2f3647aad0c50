"""Test PDFs: built out of real corpus pages (pdfium's page import), or single pages of a known make-up drawn
in memory with pdfium (text lines, ruling lines, an image) for tests that need one without a file."""

from __future__ import annotations

import ctypes
import io
from pathlib import Path
from typing import Any

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
from PIL import Image, ImageDraw


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


SENTENCE = "The quarterly report lists revenue, costs and the outlook for the coming year in plain words."


def make_pdf(*, lines: list[str] | None = None, symbol_lines: list[str] | None = None, rules: int = 0,
             image_box: tuple[float, float, float, float] | None = None, size: float = 11.0) -> bytes:
    """A US-letter page: `lines` of text from the top (Helvetica), then `symbol_lines` (the Symbol font, which
    has the math glyphs), `rules` horizontal lines, an image at `image_box` (left, bottom, width, height in pt)."""
    document = pdfium.PdfDocument.new()
    page = document.new_page(612, 792)
    helvetica = pdfium_c.FPDFText_LoadStandardFont(document.raw, b"Helvetica")
    symbol = pdfium_c.FPDFText_LoadStandardFont(document.raw, b"Symbol")
    placed = [(line, helvetica) for line in lines or []] + [(line, symbol) for line in symbol_lines or []]
    for number, (line, font) in enumerate(placed):
        text_object = pdfium_c.FPDFPageObj_CreateTextObj(document.raw, font, ctypes.c_float(size))
        encoded = ctypes.create_string_buffer((line + "\0").encode("utf-16-le"))
        pdfium_c.FPDFText_SetText(text_object, ctypes.cast(encoded, ctypes.POINTER(pdfium_c.FPDF_WCHAR)))
        pdfium_c.FPDFPageObj_Transform(text_object, 1, 0, 0, 1, 72, 720 - number * (size + 3))
        pdfium_c.FPDFPage_InsertObject(page.raw, text_object)
    for number in range(rules):
        rule = pdfium_c.FPDFPageObj_CreateNewRect(72, 80 + number * 6, 468, 0.5)
        pdfium_c.FPDFPath_SetDrawMode(rule, pdfium_c.FPDF_FILLMODE_ALTERNATE, 0)
        pdfium_c.FPDFPage_InsertObject(page.raw, rule)
    if image_box:
        left, bottom, width, height = image_box
        picture = pdfium.PdfImage.new(document)
        bitmap = pdfium.PdfBitmap.from_pil(Image.new("RGB", (64, 64), (90, 120, 200)))
        picture.set_bitmap(bitmap)
        picture.set_matrix(pdfium.PdfMatrix().scale(width, height).translate(left, bottom))
        page.insert_obj(picture)
    page.gen_content()
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def placed_text_pdf(runs: list[tuple[str, float, float, float]]) -> bytes:
    """An A4 page of Helvetica text runs, each (text, left, baseline, size) in pt from the bottom left, drawn in
    the order given (the content order)."""
    document = pdfium.PdfDocument.new()
    page = document.new_page(595, 842)
    helvetica = pdfium_c.FPDFText_LoadStandardFont(document.raw, b"Helvetica")
    for text, left, baseline, size in runs:
        text_object = pdfium_c.FPDFPageObj_CreateTextObj(document.raw, helvetica, ctypes.c_float(size))
        encoded = ctypes.create_string_buffer((text + "\0").encode("utf-16-le"))
        pdfium_c.FPDFText_SetText(text_object, ctypes.cast(encoded, ctypes.POINTER(pdfium_c.FPDF_WCHAR)))
        pdfium_c.FPDFPageObj_Transform(text_object, 1, 0, 0, 1, left, baseline)
        pdfium_c.FPDFPage_InsertObject(page.raw, text_object)
    page.gen_content()
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def text_page(count: int = 12) -> bytes:
    return make_pdf(lines=[f"{number}. {SENTENCE}" for number in range(1, count + 1)])


def _raw_pdf(objects: list[bytes]) -> bytes:
    """A PDF written byte by byte from object bodies (object 1 is the catalog), with a correct xref table."""
    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


_ONE_PAGE_TREE = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>"]


def write_padded_pdf(path: Path, pad_bytes: int) -> None:
    """A valid one-page PDF of about `pad_bytes` bytes: the page is empty, the bulk an unused stream object
    (written in blocks, so a 200 MiB file never sits in the test's memory either)."""
    head = _raw_pdf([*_ONE_PAGE_TREE, b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>"])
    body, _, _ = head.partition(b"xref\n")
    with path.open("wb") as handle:
        handle.write(body)
        pad_offset = handle.tell()
        handle.write(f"4 0 obj\n<< /Length {pad_bytes} >>\nstream\n".encode())
        block = b"\0" * (1024 * 1024)
        left = pad_bytes
        while left > 0:
            handle.write(block[:min(left, len(block))])
            left -= len(block)
        handle.write(b"\nendstream\nendobj\n")
        xref = handle.tell()
        offsets = [int(line.split()[0]) for line in head.partition(b"xref\n")[2].splitlines()[2:5]]
        handle.write(b"xref\n0 5\n0000000000 65535 f \n")
        handle.write(b"".join(f"{offset:010d} 00000 n \n".encode() for offset in [*offsets, pad_offset]))
        handle.write(f"trailer\n<< /Size 5 /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode())


def flate_bomb_pdf(expanded_bytes: int) -> bytes:
    """A one-page PDF whose content stream is a few MiB of FlateDecode that inflate to `expanded_bytes` of
    spaces: a zip bomb for anything that decompresses content streams whole.

    Built in a second, not by deflating gigabytes: one block is deflated with a full flush (byte-aligned, no
    reference to earlier data), repeated, then closed with an empty final block and the Adler-32 of the whole."""
    import zlib

    block = b" " * (16 * 1024 * 1024)
    compressor = zlib.compressobj(9)
    segment = compressor.compress(block) + compressor.flush(zlib.Z_FULL_FLUSH)
    header, body = segment[:2], segment[2:]
    repeats = max(1, expanded_bytes // len(block))
    checksum = 1
    for _ in range(repeats):
        checksum = zlib.adler32(block, checksum)
    stream = header + body * repeats + b"\x03\x00" + checksum.to_bytes(4, "big")
    return _raw_pdf([*_ONE_PAGE_TREE,
                     b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
                     f"<< /Length {len(stream)} /Filter /FlateDecode >>\nstream\n".encode() + stream +
                     b"\nendstream"])


def png_claiming(width: int, height: int) -> bytes:
    """A PNG whose header declares `width` x `height` pixels over a few bytes of (deflated) data."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)  # 8-bit greyscale
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 1024)) + \
        chunk(b"IEND", b"")


def jpeg_claiming(width: int, height: int) -> bytes:
    """A small real JPEG whose frame header is patched to declare `width` x `height` pixels."""
    buffer = io.BytesIO()
    Image.new("L", (8, 8), 255).save(buffer, "JPEG")
    data = bytearray(buffer.getvalue())
    sof = data.index(b"\xff\xc0")
    data[sof + 5:sof + 9] = height.to_bytes(2, "big") + width.to_bytes(2, "big")
    return bytes(data)


def image_bomb_pdf(width: int, height: int) -> bytes:
    """A one-page PDF that draws an image XObject declaring `width` x `height` pixels (Flate, a few KiB)."""
    import zlib

    pixels = zlib.compress(b"\0" * (1024 * 1024), 9)
    content = b"q 612 0 0 792 0 0 cm /Im0 Do Q"
    return _raw_pdf([*_ONE_PAGE_TREE,
                     b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
                     b"/Resources << /XObject << /Im0 5 0 R >> >> >>",
                     f"<< /Length {len(content)} >>\nstream\n".encode() + content + b"\nendstream",
                     f"<< /Type /XObject /Subtype /Image /Width {width} /Height {height} /ColorSpace /DeviceGray "
                     f"/BitsPerComponent 8 /Filter /FlateDecode /Length {len(pixels)} >>\nstream\n".encode() +
                     pixels + b"\nendstream"])


def text_pages(count: int) -> bytes:
    """A PDF of `count` alike text pages, drawn in memory: an upload that needs no corpus file."""
    document = pdfium.PdfDocument(text_page(3))
    if count > 1:
        document.import_pages(pdfium.PdfDocument(text_page(3)), [0] * (count - 1))
    buffer = io.BytesIO()
    document.save(buffer)
    document.close()
    return buffer.getvalue()


def stored_upload(data: bytes, folder: Path, filename: str = "a.pdf") -> Any:
    """A `service.Upload` of `data` as the gateway hands it on: the file on disk with its size and SHA-256."""
    import hashlib

    from services.gateway.documents.service import Upload

    path = folder / f"upload-{hashlib.sha256(data).hexdigest()[:12]}"
    path.write_bytes(data)
    return Upload(source=path, size=len(data), sha256=hashlib.sha256(data).hexdigest(), filename=filename)


FIGURE_CAPTION = "Figure 1: A red box with a blue disc."
FIGURE_BOX = (150.0, 147.0, 450.0, 372.0)  # the picture on the US-letter page, pt from the top left


def figure_pdf() -> bytes:
    """A US-letter page: body text, a 300 x 225 pt picture (a red box with a blue disc, drawn as an embedded
    JPEG at `FIGURE_BOX`), its caption under it, more body text."""
    document = pdfium.PdfDocument.new()
    page = document.new_page(612, 792)
    helvetica = pdfium_c.FPDFText_LoadStandardFont(document.raw, b"Helvetica")

    def text(line: str, top: float) -> None:
        text_object = pdfium_c.FPDFPageObj_CreateTextObj(document.raw, helvetica, ctypes.c_float(10))
        encoded = ctypes.create_string_buffer((line + "\0").encode("utf-16-le"))
        pdfium_c.FPDFText_SetText(text_object, ctypes.cast(encoded, ctypes.POINTER(pdfium_c.FPDF_WCHAR)))
        pdfium_c.FPDFPageObj_Transform(text_object, 1, 0, 0, 1, 150 if line == FIGURE_CAPTION else 72, top)
        pdfium_c.FPDFPage_InsertObject(page.raw, text_object)

    for row in range(6):
        text("Body text of the report explains the results in some detail for readers.", 740 - row * 14)
    picture = Image.new("RGB", (400, 300), (200, 30, 30))
    ImageDraw.Draw(picture).ellipse((100, 80, 300, 220), fill=(30, 30, 200))
    jpeg = io.BytesIO()
    picture.save(jpeg, "JPEG")
    jpeg.seek(0)
    image = pdfium.PdfImage.new(document)
    image.load_jpeg(jpeg, inline=False)
    image.set_matrix(pdfium.PdfMatrix().scale(300, 225).translate(FIGURE_BOX[0], 792 - FIGURE_BOX[3]))
    page.insert_obj(image)
    text(FIGURE_CAPTION, 400)
    for row in range(6):
        text("More body text follows the figure and continues the discussion at length.", 370 - row * 14)
    page.gen_content()
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def form_pdf() -> bytes:
    """A US-letter page with a title line and an AcroForm: text fields `name` ("Ada Lovelace", tooltip "Full
    name") and `city` (empty), check boxes `agree` (on) and `newsletter` (off), a radio group `plan` ("yearly"
    of monthly/yearly). Widget boxes in PDF points, bottom-left origin, as `FORM_WIDGETS` lists them."""
    from pypdf import PdfWriter
    from pypdf.generic import (
        ArrayObject,
        DictionaryObject,
        FloatObject,
        NameObject,
        NumberObject,
        TextStringObject,
    )
    base = placed_text_pdf([("Application form", 72, 740, 16)])
    writer = PdfWriter(clone_from=io.BytesIO(base))
    page = writer.pages[0]

    def rect(box: tuple[float, float, float, float]) -> ArrayObject:
        return ArrayObject([FloatObject(v) for v in box])

    def widget(**entries: Any) -> Any:
        body = DictionaryObject({NameObject("/Type"): NameObject("/Annot"),
                                 NameObject("/Subtype"): NameObject("/Widget"), NameObject("/F"): NumberObject(4)})
        body.update({NameObject(f"/{k}"): v for k, v in entries.items()})
        return writer._add_object(body)

    fields = [
        widget(FT=NameObject("/Tx"), T=TextStringObject("name"), TU=TextStringObject("Full name"),
               V=TextStringObject("Ada Lovelace"), Rect=rect(FORM_WIDGETS["name"])),
        widget(FT=NameObject("/Tx"), T=TextStringObject("city"), Rect=rect(FORM_WIDGETS["city"])),
        widget(FT=NameObject("/Btn"), T=TextStringObject("agree"), V=NameObject("/Yes"), AS=NameObject("/Yes"),
               Rect=rect(FORM_WIDGETS["agree"])),
        widget(FT=NameObject("/Btn"), T=TextStringObject("newsletter"), V=NameObject("/Off"),
               AS=NameObject("/Off"), Rect=rect(FORM_WIDGETS["newsletter"])),
    ]
    radio = writer._add_object(DictionaryObject({
        NameObject("/FT"): NameObject("/Btn"), NameObject("/T"): TextStringObject("plan"),
        NameObject("/Ff"): NumberObject(1 << 15), NameObject("/V"): NameObject("/yearly")}))
    kids = []
    for option in ("monthly", "yearly"):
        kid = widget(Parent=radio, Rect=rect(FORM_WIDGETS[f"plan.{option}"]),
                     AS=NameObject(f"/{option}" if option == "yearly" else "/Off"),
                     AP=DictionaryObject({NameObject("/N"): DictionaryObject({
                         NameObject(f"/{option}"): writer._add_object(DictionaryObject()),
                         NameObject("/Off"): writer._add_object(DictionaryObject())})}))
        kids.append(kid)
    radio.get_object()[NameObject("/Kids")] = ArrayObject(kids)
    page[NameObject("/Annots")] = ArrayObject([*fields, *kids])
    writer._root_object[NameObject("/AcroForm")] = DictionaryObject({
        NameObject("/Fields"): ArrayObject([*fields, radio])})
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


FORM_WIDGETS = {"name": (150.0, 680.0, 400.0, 700.0), "city": (150.0, 640.0, 400.0, 660.0),
                "agree": (72.0, 600.0, 84.0, 612.0), "newsletter": (72.0, 580.0, 84.0, 592.0),
                "plan.monthly": (72.0, 540.0, 84.0, 552.0), "plan.yearly": (150.0, 540.0, 162.0, 552.0)}
