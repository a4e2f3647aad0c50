"""LlamaParse's parsing API as `llama-cloud-services`' `LlamaParse` calls it:

    POST /api/parsing/upload                            multipart `file` -> {"id": job id, "status": "PENDING"}
    GET  /api/parsing/job/{id}                          {"id", "status": PENDING|SUCCESS|PARTIAL_SUCCESS|ERROR|
                                                         CANCELLED, "error_code", "error_message"}
    GET  /api/parsing/job/{id}/result/{markdown|text|json}   (`llamaparse_results`)

A job is a pagemill document (its id is the document id), made and read through `/v1/documents` in-process with the
caller's bearer key. The client sends only the options its user set (plus `language`, `save_images`,
`line_level_bounding_box` and `from_python_package`); any option pagemill cannot honour is refused with 400
`unsupported_option`, in LlamaParse's `{"detail": ...}` shape.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import JSONResponse
from starlette.datastructures import FormData, UploadFile

from services.core.db.models import DOCUMENT_ID_PATTERN
from services.gateway.compat.errors import DetailError, detail_errors
from services.gateway.compat.inproc import ApiError, Upload, open_api
from services.gateway.compat.llamaparse_results import RESULTS
from services.gateway.mcp.mount import bearer_key

TAG = "llamaparse-compatible"
router = APIRouter(prefix="/api/parsing", tags=[TAG])
STATUSES = {"queued": "PENDING", "running": "PENDING", "succeeded": "SUCCESS", "partial": "PARTIAL_SUCCESS",
            "failed": "ERROR", "cancelled": "CANCELLED"}
FALSE = frozenset({"", "false", "0", "none", "null"})
BOOLEANS = frozenset({"true", "false"})
# Always taken: the client's bookkeeping and hints pagemill does not need.
IGNORED = frozenset({"from_python_package", "language", "save_images"})
MODES = {"fast_mode": "fast", "premium_mode": "accurate"}
FLAGS = ("do_not_cache", "invalidate_cache", "line_level_bounding_box", "save_images", "from_python_package",
         *MODES)
HANDLED = frozenset({"file", "target_pages", "language", *FLAGS})
RESULT_TYPES = ("markdown", "text", "json")
TARGET_PAGES = re.compile(r"^\s*\d+(\s*-\s*\d+)?(\s*,\s*\d+(\s*-\s*\d+)?)*\s*$")
JobId = Annotated[str, Path(description="the job id (a pagemill document id); another: 404")]
# LlamaCloud's tenancy; here the key decides the tenant, so they are taken and not used.
OrganizationId = Annotated[str | None, Query(description="ignored: the API key decides the tenant")]

UPLOAD_BODY: dict[str, Any] = {"required": True, "content": {"multipart/form-data": {"schema": {
    "type": "object", "required": ["file"],
    "properties": {
        "file": {"type": "string", "format": "binary"},
        "target_pages": {"type": "string", "pattern": r"^\s*$|" + TARGET_PAGES.pattern,  # empty: every page
                         "description": "0-based pages, like '0,2-4'"},
        "fast_mode": {"type": "boolean", "description": "mode=fast"},
        "premium_mode": {"type": "boolean", "description": "mode=accurate"},
        "do_not_cache": {"type": "boolean"},
        "invalidate_cache": {"type": "boolean", "description": "do not answer from the result cache"},
        "line_level_bounding_box": {"type": "boolean", "enum": [False]},
        "language": {"type": "string", "description": "taken, not used"},
        "save_images": {"type": "boolean", "description": "taken; figures are served by pagemill's own API"},
        "from_python_package": {"type": "boolean"},
    },
    "additionalProperties": False,
    "description": "Any other option set (not false or empty): 400 unsupported_option.",
}}}}
JOB = {"type": "object", "required": ["id", "status"], "properties": {
    "id": {"type": "string"}, "status": {"type": "string", "enum": sorted(set(STATUSES.values()))},
    "error_code": {"type": ["string", "null"]}, "error_message": {"type": ["string", "null"]}}}


def _key(request: Request) -> str:
    key = bearer_key(request.headers)
    if not key:
        raise DetailError(401, "unauthorized", "an API key is required: Authorization: Bearer <key>")
    return key


def _given(form: FormData, name: str) -> bool:
    return str(form.get(name) or "").strip().lower() not in FALSE


def zero_based_pages(spec: str) -> str:
    """LlamaParse's `target_pages` (0-based, '0,2-4') as pagemill's `pages` (1-based, '1,3-5')."""
    if not TARGET_PAGES.match(spec):
        raise DetailError(422, "validation_error", "target_pages: page numbers from 0, like '0,2-4'")
    return ",".join("-".join(str(int(n) + 1) for n in part.split("-")) for part in spec.replace(" ", "").split(","))


def upload_fields(form: FormData) -> dict[str, str]:
    """pagemill's upload fields for LlamaParse's; refuses the options it cannot honour."""
    if refused := sorted(name for name in set(form.keys()) - HANDLED if _given(form, name)):  # set: not "no"
        raise DetailError(400, "unsupported_option", f"{', '.join(refused)}: not supported by pagemill")
    for name in FLAGS:
        if name in form and str(form[name]).strip().lower() not in BOOLEANS:
            raise DetailError(422, "validation_error", f"{name}: must be true or false")
    if _given(form, "line_level_bounding_box"):
        raise DetailError(400, "unsupported_option", "line_level_bounding_box: pagemill boxes blocks, not lines")
    modes = [mode for name, mode in MODES.items() if _given(form, name)]
    if len(modes) > 1:
        raise DetailError(422, "validation_error", "fast_mode and premium_mode: choose one")
    fields = {"mode": modes[0]} if modes else {}
    if str(form.get("target_pages") or "").strip():  # "0" is the first page, not "no"
        fields["pages"] = zero_based_pages(str(form["target_pages"]))
    if _given(form, "do_not_cache"):
        fields |= {"do_not_cache": "true", "cache": "false"}
    if _given(form, "invalidate_cache"):
        fields["cache"] = "false"
    return fields


def _check_job_id(job_id: str) -> None:
    if not re.match(DOCUMENT_ID_PATTERN, job_id):
        raise DetailError(404, "not_found", f"job {job_id} not found")


def _error(exc: ApiError | DetailError) -> JSONResponse:
    if isinstance(exc, ApiError):
        exc = DetailError(exc.status, exc.code, exc.message)
    return exc.response()


@router.post("/upload", summary="Start a parse job (LlamaParse)",
             responses=detail_errors(400, 401, 413, 415, 422, 429, 503),
             openapi_extra={"requestBody": UPLOAD_BODY}, response_model=dict[str, Any])
async def upload(request: Request, organization_id: OrganizationId = None,
                 project_id: OrganizationId = None) -> JSONResponse:
    """The file becomes a pagemill document; the answer is the job (the document's id), PENDING."""
    try:
        async with open_api(request, _key(request)) as api:
            await api.documents(limit=1, cursor=None, status=None)  # the key, before the body is read
            form = await request.form(max_files=1, max_fields=200)
            try:
                fields = upload_fields(form)
                file = form.get("file")
                if not isinstance(file, UploadFile):
                    raise DetailError(422, "validation_error", "file: a file is required (input_url and "
                                                               "input_s3_path are not supported)")
                document = await api.submit(Upload(file.filename or "document", await file.read()), fields)
            finally:
                await form.close()
    except (ApiError, DetailError) as exc:
        return _error(exc)
    return JSONResponse({"id": document["id"], "status": STATUSES[document["status"]]})


def _job(document: dict[str, Any]) -> dict[str, Any]:
    error = document.get("error") or {}
    status = STATUSES[document["status"]]
    message = error.get("message")
    if status == "PARTIAL_SUCCESS" and not message:
        message = f"{document['pages_failed']} of {document['pages_total']} pages could not be parsed"
    return {"id": document["id"], "status": status, "error_code": error.get("code"), "error_message": message}


@router.get("/job/{job_id}", summary="A parse job's status (LlamaParse)", responses=detail_errors(401, 404, 422),
            response_model=dict[str, Any], openapi_extra={"responses": {"200": {"content": {
                "application/json": {"schema": JOB}}}}})
async def job(request: Request, job_id: JobId) -> JSONResponse:
    try:
        _check_job_id(job_id)
        async with open_api(request, _key(request)) as api:
            return JSONResponse(_job(await api.document(job_id)))
    except (ApiError, DetailError) as exc:
        return _error(exc)


@router.get("/job/{job_id}/result/{result_type}", summary="A parse job's result (LlamaParse)",
            responses=detail_errors(401, 404, 409, 410, 422), response_model=dict[str, Any])
async def job_result(request: Request, job_id: JobId,
                     result_type: Annotated[str, Path(description="markdown, text or json; another: 404")]
                     ) -> JSONResponse:
    """The finished document's pages as LlamaParse's markdown, text or json result."""
    try:
        _check_job_id(job_id)
        if result_type not in RESULT_TYPES:
            raise DetailError(404, "not_found", f"result type {result_type}: there are {', '.join(RESULT_TYPES)}")
        async with open_api(request, _key(request)) as api:
            document = await api.document(job_id)
            result = await api.result(job_id, "json")
    except (ApiError, DetailError) as exc:
        return _error(exc)
    return JSONResponse(RESULTS[result_type](result, bool(document.get("cached"))))
