"""Figures kept: each boxed figure element's image, cropped from its rendered page and stored beside the results.

At assembly every succeeded page's `figure` elements with a box are cropped from the page rendered at
`outputs.figure_dpi` (a PDF page through pdfium, with its /Rotate; an image page from its own pixels) and stored
at `documents/{id}/figures/{element id}.png` (a photo-like crop whose PNG would be large: `.jpg`). The element
gets `image` (`figures/p3-e5.png`, relative to the results) and `caption_id` (the caption next to it in reading
order), its Markdown becomes `![caption](figures/p3-e5.png)`, and the document JSON lists the images
(`figures`). A page whose Markdown is its tree rendered gets its Markdown rendered again; one whose Markdown
is the model's own keeps it.

A figure without a box (a model's `![...]` that matched nothing on the page) has nothing to crop: it stays
a placeholder. An upload with `figures=false` (document option) or `outputs.figures=false` keeps none.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from PIL import Image, ImageStat

from services.core.db.models import Document, Page
from services.core.elements import Element, ElementType, chart_markdown, page_markdown
from services.core.errors import describe
from services.core.logging import get_logger
from services.core.pages import PageEntry, entry_elements, entry_size
from services.core.pdf import PDF, PDFIUM_LOCK, copy_page, load_image, open_pdf, render_pdf_page
from services.core.settings import Settings
from services.core.storage import FIGURE_MEDIA_TYPES, ObjectStore, figure_key

log = get_logger(__name__)
# A crop is kept as PNG unless that is larger than this and JPEG (quality 85) is at least this much smaller.
PNG_MAX_BYTES = 1_500_000
JPEG_GAIN = 2.0
# A caption this many elements before or after a figure in reading order is its caption.
CAPTION_REACH = 2
# A crop whose grey levels spread less than this (standard deviation, 0-255) is blank: a white image used as a
# mask or a page corner, nothing to show. The figure stays, without an image.
BLANK_STDDEV = 2.0


@dataclass(slots=True)
class KeptFigures:
    """What `keep_figures` stored: the JSON's `figures` list and each image's bytes by path (for the HTML)."""

    assets: list[dict[str, Any]] = field(default_factory=list)
    images: dict[str, bytes] = field(default_factory=dict)
    seconds: float = 0.0


def figures_wanted(document: Document, settings: Settings) -> bool:
    return bool(settings.outputs.figures) and (document.options or {}).get("figures", True) is not False


def caption_of(elements: list[Element], index: int) -> Element | None:
    """The caption nearest the figure at `index` in reading order (after it first), none past `CAPTION_REACH`."""
    for distance in range(1, CAPTION_REACH + 1):
        for other in (index + distance, index - distance):
            if 0 <= other < len(elements) and elements[other].type is ElementType.CAPTION:
                text = elements[other].text.lower().lstrip("*_ ")
                if not text.startswith(("table", "tab.")):
                    return elements[other]
    return None


def figure_markdown(alt: str, path: str) -> str:
    clean = " ".join(alt.replace("[", "(").replace("]", ")").split())[:300]
    return f"![{clean}]({path})"


def blank(image: Image.Image) -> bool:
    return float(ImageStat.Stat(image.convert("L")).stddev[0]) < BLANK_STDDEV


def encode(image: Image.Image) -> tuple[bytes, str]:
    """The crop as PNG, or as JPEG when the PNG is large and the JPEG much smaller (a photo)."""
    buffer = io.BytesIO()
    image.save(buffer, "PNG", optimize=False)
    png = buffer.getvalue()
    if len(png) <= PNG_MAX_BYTES:
        return png, "png"
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, "JPEG", quality=85)
    jpeg = buffer.getvalue()
    return (jpeg, "jpg") if len(jpeg) * JPEG_GAIN <= len(png) else (png, "png")


# The page's pixels for an entry: rendered PDF or decoded image, RGB.
PagePixels = Callable[[PageEntry], Image.Image]


def page_image(data: bytes, width_pt: float, height_pt: float, settings: Settings) -> Image.Image:
    """A page's file (a one-page PDF, or an image) as RGB pixels: a PDF rendered at `outputs.figure_dpi`."""
    if not data.startswith(b"%PDF"):
        return load_image(data)
    longest = int(max(width_pt, height_pt) * settings.outputs.figure_dpi / 72)
    return render_pdf_page(data, longest_side=max(64, longest), max_pixels=settings.outputs.figure_max_pixels)


def stored_pixels(store: ObjectStore, document: Document, pages: list[Page], settings: Settings) -> PagePixels:
    """Page pixels read from the object store: the page's own file, or its page of the document's PDF."""
    sources: dict[str, bytes] = {}
    by_position = {page.index + 1: page for page in pages}

    def pixels(entry: PageEntry) -> Image.Image:
        page = by_position[int(entry["page"])]
        key = page.source_key or document.source_key
        data = sources.get(key)
        if data is None:
            data = sources[key] = store.get(key)
        if key == document.source_key and document.media_type == PDF and data.startswith(b"%PDF"):
            with PDFIUM_LOCK:
                pdf = open_pdf(data)
                try:
                    data = copy_page(pdf, page.page_number)
                finally:
                    pdf.close()
        return page_image(data, *entry_size(entry), settings)

    return pixels


def crop(image: Image.Image, bbox: tuple[float, float, float, float], width_pt: float,
         height_pt: float) -> Image.Image | None:
    """The box (page points, top-left origin) cut out of the page's pixels, or None when it has no area."""
    scale_x, scale_y = image.width / width_pt, image.height / height_pt
    x0, y0 = max(0, int(bbox[0] * scale_x)), max(0, int(bbox[1] * scale_y))
    x1, y1 = min(image.width, int(round(bbox[2] * scale_x))), min(image.height, int(round(bbox[3] * scale_y)))
    if x1 - x0 < 2 or y1 - y0 < 2:
        return None
    return image.crop((x0, y0, x1, y1))


def keep_figures(document: Document, pages: list[Page], entries: list[PageEntry], settings: Settings,
                 store: ObjectStore) -> KeptFigures:
    """Crops every boxed figure of the document's succeeded pages and stores each image beside its results."""
    kept = crop_figures(entries, stored_pixels(store, document, pages, settings), document_id=document.id)
    for asset in kept.assets:
        store.put(figure_key(document.id, asset["path"].removeprefix("figures/")), kept.images[asset["path"]],
                  content_type=asset["media_type"])
    return kept


def crop_figures(entries: list[PageEntry], pixels: PagePixels, *, document_id: str = "") -> KeptFigures:
    """Crops every boxed figure of the succeeded page entries (`PageEntry`s, changed in place:
    `elements`, `markdown`). A page whose pixels cannot be had (its source gone) keeps placeholders."""
    kept = KeptFigures()
    started = time.perf_counter()
    for entry in entries:
        if entry.get("status") != "succeeded" or not entry.get("elements"):
            continue
        elements = entry_elements(entry)
        wanted = [i for i, e in enumerate(elements) if e.type is ElementType.FIGURE and e.bbox is not None]
        width_pt, height_pt = entry_size(entry)
        if not wanted or width_pt <= 0 or height_pt <= 0:
            continue
        consistent = (entry.get("markdown") or "").strip() == page_markdown(elements).strip()
        try:
            image_of_page = pixels(entry)
        except Exception as exc:  # noqa: BLE001 - one unreadable page loses its figures' images, not the document
            log.warning("figures.page_unreadable", document_id=document_id, page=entry.get("page_number"),
                        error=describe(exc))
            continue
        for index in wanted:
            element = elements[index]
            assert element.bbox is not None
            image = crop(image_of_page, element.bbox, width_pt, height_pt)
            if image is None or blank(image):
                continue
            data, extension = encode(image)
            path = f"figures/{element.id}.{extension}"
            caption = caption_of(elements, index)
            alt = caption.text if caption is not None else (
                f"{element.chart} chart" if element.chart else element.text or "figure")
            elements[index] = element.model_copy(update={
                "image": path, "caption_id": caption.id if caption else None,
                "markdown": chart_markdown(element, figure_markdown(alt, path))})
            kept.images[path] = data
            kept.assets.append({
                "element_id": element.id, "page": int(entry["page_number"]), "bbox": list(element.bbox),
                "path": path, "media_type": FIGURE_MEDIA_TYPES[extension], "width_px": image.width,
                "height_px": image.height, "bytes": len(data), "caption_id": caption.id if caption else None,
                "caption": caption.text if caption else ""})
        entry["elements"] = [e.model_dump(mode="json") for e in elements]
        if consistent:
            body = page_markdown(elements)
            entry["markdown"] = body + "\n" if body else ""
    kept.seconds = time.perf_counter() - started
    return kept
