"""Reading what customers upload: media type by magic bytes, PDF inspection, page splitting and rendering.

pdfium is not thread-safe, so every call into it holds `PDFIUM_LOCK`.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import io
import mmap
import os
import re
import struct
import threading
import zlib
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
from PIL import Image

from services.core.errors import (
    CorruptDocument,
    EmptyDocument,
    EncryptedPdf,
    PageTooLarge,
    UnsupportedMediaType,
)
from services.core.formats import OFFICE_EXTENSIONS
from services.core.settings import MAX_PAGE_SIDE_PT, MAX_RENDER_PIXELS

PDFIUM_LOCK = threading.RLock()

PDF = "application/pdf"
PNG = "image/png"
JPEG = "image/jpeg"
TIFF = "image/tiff"
WEBP = "image/webp"
EXTENSIONS = {PDF: ".pdf", PNG: ".png", JPEG: ".jpg", TIFF: ".tif", WEBP: ".webp", **OFFICE_EXTENSIONS}
IMAGE_TYPES = frozenset({PNG, JPEG, TIFF, WEBP})

# A decompression bomb is refused before Pillow allocates it; 200 Mpx is ~14,000 px square.
Image.MAX_IMAGE_PIXELS = 200_000_000


def sniff_media_type(head: bytes) -> str:
    """The media type from the first bytes of a file, whatever its name or Content-Type claim."""
    if head[:4] == b"\x89PNG":
        return PNG
    if head[:3] == b"\xff\xd8\xff":
        return JPEG
    if head[:4] in (b"II*\x00", b"MM\x00*"):
        return TIFF
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return WEBP
    # The PDF spec allows junk before the header; readers accept it within the first kilobyte.
    if b"%PDF-" in head[:1024]:
        return PDF
    if not head:
        raise EmptyDocument("the file is empty")
    raise UnsupportedMediaType("the file is not a PDF, PNG, JPEG, TIFF or WebP")


@dataclass(frozen=True, slots=True)
class DocumentInfo:
    media_type: str
    page_count: int


def open_pdf(data: bytes | Path) -> pdfium.PdfDocument:
    """Opens a PDF (bytes, or a file pdfium reads as it needs), turning pdfium's failures into the error codes
    the API promises."""
    with PDFIUM_LOCK:
        try:
            return pdfium.PdfDocument(data)
        except pdfium.PdfiumError as exc:
            code = getattr(exc, "err_code", None)
            if code == pdfium_c.FPDF_ERR_PASSWORD:
                raise EncryptedPdf("the PDF is protected by a password") from exc
            if code == pdfium_c.FPDF_ERR_SECURITY:
                raise EncryptedPdf("the PDF uses an unsupported security handler") from exc
            if code == pdfium_c.FPDF_ERR_SUCCESS or _has_no_pages(data):
                raise EmptyDocument("the PDF has no pages") from exc
            raise CorruptDocument(f"the PDF cannot be read ({exc})") from exc


_PAGE_OBJECT = re.compile(rb"/Type\s*/Page(?![a-zA-Z])")


def _has_no_pages(source: bytes | Path) -> bool:
    """Second opinion on a PDF pdfium refuses: well-formed but without pages (`/Count 0`, no page tree)?

    A file without even a catalog is corrupt, not empty. A file is mapped, not read into memory.
    """
    if isinstance(source, bytes):
        return _no_pages_in(source, io.BytesIO(source))
    with source.open("rb") as handle:
        if os.fstat(handle.fileno()).st_size == 0:
            return False
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            return _no_pages_in(mapped, handle)


def _no_pages_in(data: bytes | mmap.mmap, stream: IO[bytes]) -> bool:
    import pypdf

    if data.find(b"/Catalog") < 0:
        return False
    try:
        return len(pypdf.PdfReader(stream, strict=False).pages) == 0
    except Exception:  # noqa: BLE001 - any parse failure: fall back to looking for page objects
        # Page objects can hide in compressed object streams; only a file without them can be called empty.
        return data.find(b"/ObjStm") < 0 and _PAGE_OBJECT.search(data) is None


def inspect_document(data: bytes | Path) -> DocumentInfo:
    """Media type and page count of bytes or of a file; raises a typed `InputError` for anything unusable."""
    if isinstance(data, Path):
        with data.open("rb") as handle:
            head = handle.read(1024)
    else:
        head = data[:1024]
    media_type = sniff_media_type(head)
    if media_type == PDF:
        pdf = open_pdf(data)
        with PDFIUM_LOCK:
            try:
                count = len(pdf)
            finally:
                pdf.close()
        if count <= 0:
            raise EmptyDocument("the PDF has no pages")
        return DocumentInfo(media_type, count)
    return DocumentInfo(media_type, _image_frame_count(data))


def _image_frame_count(data: bytes | Path) -> int:
    def source() -> io.BytesIO | Path:
        return data if isinstance(data, Path) else io.BytesIO(data)

    try:
        with Image.open(source()) as image:
            image.verify()
        with Image.open(source()) as image:
            if image.width <= 0 or image.height <= 0:
                raise EmptyDocument("the image has no pixels")
            return int(getattr(image, "n_frames", 1))
    except Image.DecompressionBombError as exc:
        raise CorruptDocument(f"the image is too large to decode safely ({exc})") from exc
    except (OSError, SyntaxError, ValueError) as exc:
        raise CorruptDocument(f"the image cannot be read ({exc})") from exc


def split_pdf(data: bytes, page_numbers: list[int]) -> Iterator[bytes]:
    """One single-page PDF per requested page (1-based), so a page job never fetches the whole document."""
    with PDFIUM_LOCK:
        source = open_pdf(data)
    try:
        for number in page_numbers:
            with PDFIUM_LOCK:
                single = copy_page(source, number)
            yield single
    finally:
        with PDFIUM_LOCK:
            source.close()


def copy_page(source: pdfium.PdfDocument, number: int) -> bytes:
    """Page `number` (1-based) of an open PDF as a single-page PDF. The caller holds `PDFIUM_LOCK`."""
    single = pdfium.PdfDocument.new()
    try:
        single.import_pages(source, [number - 1])
        buffer = io.BytesIO()
        single.save(buffer)
    finally:
        single.close()
    return buffer.getvalue()


def image_frame_png(data: bytes, frame: int) -> bytes:
    """One frame of a (multi-page) image as PNG."""
    with Image.open(io.BytesIO(data)) as image:
        image.seek(frame)
        buffer = io.BytesIO()
        image.convert("RGB" if image.mode not in ("L", "RGB", "RGBA") else image.mode).save(buffer, "PNG")
        return buffer.getvalue()


# What one page may inflate to before pdfium is let at it: pdfium decodes a content stream whole, so a few MiB of
# FlateDecode that expand to gigabytes (a zip bomb) would take the worker's memory with them.
MAX_PAGE_CONTENT_BYTES = 64 * 1024 * 1024
MAX_PAGE_IMAGE_BYTES = 256 * 1024 * 1024  # an image drawn on the page, decoded (a 1-bit 35,000 px square passes)
_COMPONENTS = {"/DeviceGray": 1, "/CalGray": 1, "/Indexed": 1, "/DeviceRGB": 3, "/CalRGB": 3, "/Lab": 3,
               "/DeviceCMYK": 4}
_MAX_XOBJECT_DEPTH = 8


@functools.lru_cache(maxsize=8)  # the text layer and the render of one page check it once
def check_page_budget(pdf_bytes: bytes) -> None:
    """Raises `PageTooLarge` when page 0's content streams (its own and its form XObjects') inflate beyond
    `MAX_PAGE_CONTENT_BYTES`, or an image on it declares more than `MAX_PAGE_IMAGE_BYTES` of pixels.

    Decoded by pypdf with a bounded output (it stops at the budget, never inflates the bomb whole). Any other
    trouble reading the page is pdfium's to judge, as before."""
    import pypdf
    from pypdf.errors import LimitReachedError

    try:
        page = pypdf.PdfReader(io.BytesIO(pdf_bytes), strict=False).pages[0]
    except Exception:  # noqa: BLE001 - unreadable for pypdf: pdfium decides
        return
    budget = [MAX_PAGE_CONTENT_BYTES]

    def spend(stream: Any) -> None:
        try:
            data = stream.get_data()
        except LimitReachedError as exc:
            raise PageTooLarge(f"the page's content inflates beyond {MAX_PAGE_CONTENT_BYTES >> 20} MiB") from exc
        except Exception:  # noqa: BLE001 - a broken stream: pdfium skips or refuses it
            return
        budget[0] -= len(data)
        if budget[0] < 0:
            raise PageTooLarge(f"the page's content inflates beyond {MAX_PAGE_CONTENT_BYTES >> 20} MiB")

    def walk(resources: Any, depth: int, seen: set[int]) -> None:
        try:
            xobjects = resources.get("/XObject") if resources is not None else None
            items = list(xobjects.get_object().values()) if xobjects is not None else []
        except Exception:  # noqa: BLE001
            return
        for ref in items:
            if id(ref) in seen or depth > _MAX_XOBJECT_DEPTH:
                continue
            seen.add(id(ref))
            try:
                xobject = ref.get_object()
                subtype = xobject.get("/Subtype")
                width, height = int(xobject.get("/Width", 0)), int(xobject.get("/Height", 0))
                decoded = width * height * _bits_per_pixel(xobject) // 8
            except Exception:  # noqa: BLE001
                continue
            if subtype == "/Image" and decoded > MAX_PAGE_IMAGE_BYTES:
                raise PageTooLarge(f"an image on the page declares {width} x {height} pixels ({decoded >> 20} MiB "
                                   f"decoded), above the {MAX_PAGE_IMAGE_BYTES >> 20} MiB limit")
            if subtype == "/Form":
                spend(xobject)
                walk(xobject.get("/Resources"), depth + 1, seen)

    with _pypdf_limits(MAX_PAGE_CONTENT_BYTES):
        contents = page.get("/Contents")
        if contents is not None:
            streams = contents.get_object()
            for stream in (streams if isinstance(streams, list) else [streams]):
                spend(stream.get_object() if hasattr(stream, "get_object") else stream)
        walk(page.get("/Resources"), 0, set())


def _bits_per_pixel(image: Any) -> int:
    if image.get("/ImageMask"):
        return 1
    space = image.get("/ColorSpace")
    space = space.get_object() if hasattr(space, "get_object") else space
    if isinstance(space, list) and space:
        name = str(space[0])
        components = int(space[1].get_object().get("/N", 3)) if name == "/ICCBased" else _COMPONENTS.get(name, 3)
    else:
        components = _COMPONENTS.get(str(space), 3)
    return components * int(image.get("/BitsPerComponent", 8))


def _pypdf_limits(max_output: int) -> contextlib.AbstractContextManager[Any]:
    """pypdf's own decompression bounds, set to ours (pypdf ≥ 6 has them as a context; older ones keep their
    75 MB module defaults, as close)."""
    import pypdf

    apply = getattr(pypdf, "apply_configuration", None)
    if apply is None:
        return contextlib.nullcontext()
    return apply(zlib_maximum_output_length=max_output, lzw_maximum_output_length=max_output,  # type: ignore[no-any-return]
                 run_length_maximum_output_length=max_output, array_based_stream_maximum_output_length=max_output)


def open_page_pdf(pdf_bytes: bytes) -> pdfium.PdfDocument:
    """Opens a single-page PDF (a page job's input) after `check_page_budget`: every reader of a page's
    content goes through here or `page_text`, so no code path lets pdfium inflate a bomb."""
    check_page_budget(pdf_bytes)
    return open_pdf(pdf_bytes)


@dataclass(frozen=True, slots=True)
class OpenTextPage:
    """Page 0 of a single-page PDF, open, with pdfium's text page of it."""

    pdf: pdfium.PdfDocument
    page: pdfium.PdfPage
    textpage: pdfium.PdfTextPage

    def close(self) -> None:
        self.textpage.close()
        self.page.close()
        self.pdf.close()


# The last pages whose text was read stay open: a page's text layer and the cpu engine's reading of it (the GPU
# path reads both for every page) open, parse and index its text once. Renders open their own: pdfium keeps an
# image decoded for one render size and may reuse it for the next, so a render must not depend on the ones before.
TEXT_PAGES_KEPT = 4
_text_pages: OrderedDict[bytes, OpenTextPage] = OrderedDict()


@contextlib.contextmanager
def page_text(pdf_bytes: bytes) -> Iterator[OpenTextPage]:
    """The open page and text page of a single-page PDF (after `check_page_budget`), under `PDFIUM_LOCK` while
    the block runs; opened now, or kept open from the last reader of the same bytes."""
    check_page_budget(pdf_bytes)
    with PDFIUM_LOCK:
        opened = _text_pages.pop(pdf_bytes, None)
        if opened is None:
            pdf = open_pdf(pdf_bytes)
            try:
                page = pdf[0]
                opened = OpenTextPage(pdf, page, page.get_textpage())
            except BaseException:
                pdf.close()
                raise
            if not _text_pages:
                atexit.register(close_text_pages)  # before pdfium is torn down (else it warns of each one open)
        _text_pages[pdf_bytes] = opened
        while len(_text_pages) > TEXT_PAGES_KEPT:
            _text_pages.popitem(last=False)[1].close()
        yield opened


def close_text_pages() -> None:
    with PDFIUM_LOCK:
        while _text_pages:
            _text_pages.popitem()[1].close()


def pdf_text_layer(pdf_bytes: bytes) -> str:
    """The embedded text of page 0 of a (single-page) PDF, in pdfium's order."""
    with page_text(pdf_bytes) as opened:
        text = str(opened.textpage.get_text_bounded())
    return text.replace("\r\n", "\n").replace("\r", "\n")


def render_scale(width_pt: float, height_pt: float, *, longest_side: int, max_pixels: int,
                 max_side_pt: float) -> float:
    """Scale factor from PDF points to pixels: longest side as asked, never more than `max_pixels`."""
    if width_pt <= 0 or height_pt <= 0:
        raise PageTooLarge(f"page has no area ({width_pt:.0f} x {height_pt:.0f} pt)")
    if max(width_pt, height_pt) > max_side_pt:
        raise PageTooLarge(f"page is {width_pt:.0f} x {height_pt:.0f} pt, above the {max_side_pt:.0f} pt limit")
    scale = longest_side / max(width_pt, height_pt)
    if width_pt * height_pt * scale * scale > max_pixels:
        scale = (max_pixels / (width_pt * height_pt)) ** 0.5
    return scale


def render_pdf_page(pdf_bytes: bytes, *, longest_side: int, max_pixels: int = MAX_RENDER_PIXELS,
                    max_side_pt: float = MAX_PAGE_SIDE_PT, index: int = 0, rotation: int = 0) -> Image.Image:
    """Renders one page to RGB pixels with /Rotate applied (plus `rotation` degrees clockwise)."""
    if index == 0:
        check_page_budget(pdf_bytes)
    with PDFIUM_LOCK:
        pdf = open_pdf(pdf_bytes)
        try:
            page = pdf[index]
            width, height = page.get_size()
            scale = render_scale(width, height, longest_side=longest_side, max_pixels=max_pixels,
                                 max_side_pt=max_side_pt)
            bitmap = page.render(scale=scale, rotation=rotation % 360, may_draw_forms=True)
            image: Image.Image = bitmap.to_pil().convert("RGB")
            bitmap.close()
            page.close()
        finally:
            pdf.close()
    return image


def load_image(data: bytes) -> Image.Image:
    with Image.open(io.BytesIO(data)) as image:
        image.load()
        return image.convert("RGB")


def png_bytes(image: Image.Image, *, compress_level: int = 6) -> bytes:
    """`compress_level`: zlib's 0-9; the pixels are the same at every level, only the size and time differ."""
    buffer = io.BytesIO()
    image.save(buffer, "PNG", compress_level=compress_level)
    return buffer.getvalue()


_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_PNG_COLOR_TYPES = {"L": 0, "RGB": 2}  # 8 bits a sample


def png_up_filtered(image: Image.Image, *, compress_level: int = 1) -> bytes:
    """The same pixels as `png_bytes`, written in about half its time: every row PNG's `Up` filter (its difference
    from the row above, one numpy subtraction for the whole image) where Pillow tries five filters on each row and
    keeps the smallest. On rendered pages, mostly white rows over white rows, `Up` alone compresses about as well
    (docs/benchmarks.md, the GPU path). Images other than 8-bit grey or RGB go through `png_bytes`."""
    color_type = _PNG_COLOR_TYPES.get(image.mode)
    if color_type is None:
        return png_bytes(image, compress_level=compress_level)
    import numpy as np

    pixels = np.asarray(image)
    rows = pixels.reshape(image.height, -1)
    filtered = np.empty((image.height, rows.shape[1] + 1), dtype=np.uint8)
    filtered[:, 0] = 2  # filter type Up
    filtered[0, 1:] = rows[0]
    np.subtract(rows[1:], rows[:-1], out=filtered[1:, 1:])  # uint8 arithmetic wraps modulo 256, as PNG's does
    header = struct.pack(">IIBBBBB", image.width, image.height, 8, color_type, 0, 0, 0)
    return b"".join([_PNG_SIGNATURE, _png_chunk(b"IHDR", header),
                     _png_chunk(b"IDAT", zlib.compress(filtered.data, compress_level)), _png_chunk(b"IEND", b"")])


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return b"".join([struct.pack(">I", len(data)), kind, data, struct.pack(">I", zlib.crc32(data, zlib.crc32(kind)))])
