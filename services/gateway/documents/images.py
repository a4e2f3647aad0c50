"""`GET /v1/documents/{id}/pages/{n}/image`: the stored source page rendered to PNG, for showing a page beside
its result (the playground draws the element boxes over it: scale `bbox` by image width / page width)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from services.core.db.models import Document, Page
from services.core.errors import ResultExpired
from services.core.pdf import PDF, load_image, png_bytes, render_pdf_page
from services.core.storage import ObjectNotFound, ObjectStore
from services.gateway.deps import CurrentTenant, SessionDep, StoreDep
from services.gateway.documents import service
from services.gateway.documents.schemas import ErrorResponse, PageNumber

router = APIRouter(prefix="/v1/documents", tags=["documents"])


def page_png(store: ObjectStore, document: Document, page: Page, longest_side: int) -> bytes:
    """The page's own file when the split wrote one (a one-page PDF or PNG), else the source's page."""
    own_file = page.source_key if page.source_key != document.source_key else None
    key, index = (own_file, 0) if own_file else (document.source_key, page.page_number - 1)
    try:
        data = store.get(key)
    except ObjectNotFound as exc:
        raise ResultExpired("the document's stored source is gone (deleted or past retention)") from exc
    if data.startswith(b"%PDF") or (document.media_type == PDF and not own_file):
        image = render_pdf_page(data, longest_side=longest_side, index=index)
    else:
        image = load_image(data)
        image.thumbnail((longest_side, longest_side))
    return png_bytes(image)


@router.get("/{document_id}/pages/{n}/image", response_class=Response,
            responses={200: {"content": {"image/png": {}}, "description": "the page as PNG"},
                       **{code: {"model": ErrorResponse} for code in (401, 404, 410, 422)}})
def get_page_image(
    document_id: str, n: PageNumber, session: SessionDep, store: StoreDep, tenant: CurrentTenant,
    longest_side: Annotated[int, Query(ge=64, le=4000, description="pixels of the image's longest side")] = 1600,
) -> Response:
    document = service.get_document(session, document_id, tenant.id)
    page = service.get_page(session, document, n)
    if document.expired_at is not None:
        raise ResultExpired("the document's stored data was deleted when its retention period ended")
    return Response(page_png(store, document, page, longest_side), media_type="image/png",
                    headers={"Cache-Control": "private, max-age=3600"})
