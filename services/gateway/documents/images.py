"""`GET /v1/documents/{id}/pages/{n}/image`: the stored source page rendered to PNG, for showing a page beside
its result (the playground draws the element boxes over it: scale `bbox` by image width / page width).

An image is cheap to store and dear to decode (a 223 KB PNG can be 14,000 px square: 600 MB of pixels), so the
gateway decodes within a budget (`limits.page_image_max_pixels`): a JPEG at a reduced scale (libjpeg's DCT
scaling, `Image.draft`), anything else only when it fits, `422 image_too_large` otherwise, told from the image's
header before a pixel is decoded. Each page and size is rendered once and kept in the object store beside the
document; the route counts against the tenant's rate (its own bucket), and at most `RENDER_SLOTS` renders run
at once per gateway process.
"""

from __future__ import annotations

import asyncio
import io
from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from PIL import Image

from services.core.db.session import session_scope
from services.core.errors import CorruptDocument, ImageTooLarge, NotFound, ResultExpired, clip
from services.core.pdf import PDF, PDFIUM_LOCK, copy_page, open_pdf, png_bytes, render_pdf_page
from services.core.storage import ObjectNotFound, ObjectStore, page_image_key
from services.core.tenants import effective_limits
from services.gateway.deps import CurrentTenant, RateLimiterDep, SettingsDep, StoreDep
from services.gateway.documents import service
from services.gateway.documents.schemas import ErrorResponse, PageNumber

router = APIRouter(prefix="/v1/documents", tags=["documents"])
RENDER_SLOTS = 2  # renders at once per process: the rest wait their turn on the event loop, not on a thread
RATE_BUCKET = "page_images"


@dataclass(frozen=True, slots=True)
class PageSource:
    """Where a page's pixels are: the page's own file when the split wrote one (a one-page PDF or PNG), else
    the document's source and the page's place in it."""

    document_id: str
    index: int
    key: str
    page_in_key: int  # 0-based
    is_pdf: bool


def decode_within_budget(data: bytes, *, longest_side: int, max_pixels: int) -> Image.Image:
    """The image decoded at no more than `max_pixels`: a JPEG at the smallest scale (1/2, 1/4, 1/8) that still
    covers `longest_side`, any other format whole. Over the budget: `ImageTooLarge`, known from the header,
    before anything is decoded."""
    try:
        with Image.open(io.BytesIO(data)) as image:
            width, height = image.size
            longest = max(width, height)
            if image.format == "JPEG" and longest > longest_side:  # sets the decoder's scale; decodes nothing
                image.draft(None, (max(1, width * longest_side // longest), max(1, height * longest_side // longest)))
                width, height = image.size
            if width * height > max_pixels:
                raise ImageTooLarge(f"the page image is {width} x {height} px; this gateway decodes at most "
                                    f"{max_pixels} px to show one (limits.page_image_max_pixels)")
            image.load()
            return image
    except (Image.DecompressionBombError, OSError, SyntaxError, ValueError) as exc:
        raise CorruptDocument(clip(f"the stored page image cannot be read ({exc})")) from exc


def render_page(data: bytes, *, is_pdf: bool, page_in_file: int, longest_side: int, max_pixels: int) -> bytes:
    if is_pdf:
        if page_in_file:  # on its own, so that its drawn images are measured before pdfium decodes them
            with PDFIUM_LOCK:
                pdf = open_pdf(data)
                try:
                    data = copy_page(pdf, page_in_file + 1)
                finally:
                    pdf.close()
        image = render_pdf_page(data, longest_side=longest_side, max_pixels=max_pixels)
    else:
        image = decode_within_budget(data, longest_side=longest_side, max_pixels=max_pixels)
        if image.mode not in ("L", "RGB"):  # 1-bit and palette images scale badly (nearest neighbour)
            image = image.convert("L" if image.mode == "1" else "RGB")
        image.thumbnail((longest_side, longest_side))
        image = image.convert("RGB")
    return png_bytes(image)


def find_page(database_url: str, document_id: str, n: int, tenant_id: str) -> PageSource:
    """The page, visible to the tenant and not expired (404, 410 otherwise)."""
    with session_scope(database_url) as session:
        document = service.get_document(session, document_id, tenant_id)
        page = service.get_page(session, document, n)
        if document.expired_at is not None:
            raise ResultExpired("the document's stored data was deleted when its retention period ended")
        own_file = page.source_key if page.source_key != document.source_key else None
        key, page_in_key = (own_file, 0) if own_file else (document.source_key, page.page_number - 1)
        return PageSource(document_id=document.id, index=page.index, key=key, page_in_key=page_in_key,
                          is_pdf=document.media_type == PDF and not own_file)


def render_and_keep(store: ObjectStore, source: PageSource, cached: str, *, longest_side: int,
                    max_pixels: int) -> bytes:
    try:
        data = store.get(source.key)
    except ObjectNotFound as exc:
        raise ResultExpired("the document's stored source is gone (deleted or past retention)") from exc
    png = render_page(data, is_pdf=source.is_pdf or data.startswith(b"%PDF"), page_in_file=source.page_in_key,
                      longest_side=longest_side, max_pixels=max_pixels)
    store.put(cached, png, content_type="image/png")
    return png


def render_slots(request: Request) -> asyncio.Semaphore:
    slots: asyncio.Semaphore | None = getattr(request.app.state, "page_image_slots", None)
    if slots is None:
        slots = request.app.state.page_image_slots = asyncio.Semaphore(RENDER_SLOTS)
    return slots


@router.get("/{document_id}/pages/{n}/image", response_class=Response,
            responses={200: {"content": {"image/png": {}}, "description": "the page as PNG"},
                       **{code: {"model": ErrorResponse} for code in (401, 404, 410, 422, 429)}})
async def get_page_image(
    document_id: str, n: PageNumber, request: Request, settings: SettingsDep, store: StoreDep,
    tenant: CurrentTenant, limiter: RateLimiterDep,
    longest_side: Annotated[int, Query(ge=64, le=4000, description="pixels of the image's longest side")] = 1600,
) -> Response:
    """The page as PNG. Counted against the tenant's `requests_per_minute` (apart from its submissions);
    a stored image too large to decode within the gateway's budget: `422 image_too_large`."""
    per_minute = effective_limits(tenant, settings).requests_per_minute
    await run_in_threadpool(limiter.check, tenant.id, per_minute, bucket=RATE_BUCKET)
    db = settings.resolved_database_url()
    source = await run_in_threadpool(find_page, db, document_id, n, tenant.id)
    cached = page_image_key(source.document_id, source.index, longest_side)
    try:
        png = await run_in_threadpool(store.get, cached)
    except ObjectNotFound:
        async with render_slots(request):
            png = await run_in_threadpool(render_and_keep, store, source, cached, longest_side=longest_side,
                                          max_pixels=settings.limits.page_image_max_pixels)
        try:  # deleted or expired while it rendered: what was just stored goes with the rest of it
            await run_in_threadpool(find_page, db, document_id, n, tenant.id)
        except (ResultExpired, NotFound):
            await run_in_threadpool(store.delete_prefix, cached)
            raise
    return Response(png, media_type="image/png", headers={"Cache-Control": "private, max-age=3600"})
