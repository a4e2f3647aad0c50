"""`GET /v1/documents/{id}/figures/{name}`: a figure's image, as assembly kept it beside the document's results.

The names are the ones the results use (`figures/p3-e5.png` in Markdown, LaTeX and the JSON's `figures` list),
so saving each image under its path beside `document.md` or `document.tex` makes those files whole.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query
from fastapi.responses import RedirectResponse, Response

from services.core.errors import NotFound
from services.core.storage import FIGURE_MEDIA_TYPES, FIGURE_NAME, ObjectNotFound, figure_key
from services.gateway.deps import CurrentTenant, SessionDep, SettingsDep, StoreDep
from services.gateway.documents import service
from services.gateway.documents.schemas import ErrorResponse

router = APIRouter(prefix="/v1/documents", tags=["documents"])


@router.get("/{document_id}/figures/{name}", response_class=Response,
            responses={200: {"content": {"image/png": {}, "image/jpeg": {}}, "description": "the figure's image"},
                       307: {"description": "redirect=true with the S3 store"},
                       **{code: {"model": ErrorResponse} for code in (401, 404, 409, 410, 422)}})
def get_figure(
    document_id: str, session: SessionDep, store: StoreDep, settings: SettingsDep, tenant: CurrentTenant,
    name: Annotated[str, Path(pattern=FIGURE_NAME, description="`p3-e5.png`: the figure element's id and type, "
                                                                "as the JSON's `figures[].path` names it")],
    redirect: Annotated[bool, Query(description="307 to a presigned object-store URL (S3 store only)")] = False,
) -> Response:
    document = service.finished_document(session, document_id, tenant.id, "its figures exist")
    key = figure_key(document.id, name)
    if redirect:
        url = store.presigned_url(key, settings.storage.presign_expiry_s)
        if url:
            return RedirectResponse(url, status_code=307)
    try:
        body = store.get(key)
    except ObjectNotFound as exc:
        raise NotFound(f"the document has no figure {name}; its JSON result lists the ones it has") from exc
    media = FIGURE_MEDIA_TYPES[name.rsplit(".", 1)[1]]
    return Response(body, media_type=media, headers={"X-Content-Type-Options": "nosniff",
                                                     "Cache-Control": "private, max-age=3600"})
