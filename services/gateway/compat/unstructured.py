"""The Unstructured partition API as `unstructured-client` calls it: `POST /general/v0/general` answers the
document's elements (`unstructured_elements`), synchronously, and `GET /general/docs` answers the probe the
client's PDF splitter sends before its page-range requests (each then carries `starting_page_number`).

The key comes in `unstructured-api-key` (or `Authorization: Bearer`); errors answer in Unstructured's shape,
`{"detail": message}`, with pagemill's machine-readable `code` beside it. An option pagemill cannot honour is
refused (400 `unsupported_option`), never silently ignored; options that only steer the client (`split_pdf_*`)
or only chunking (inert without `chunking_strategy`, which is refused) are accepted.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from starlette.datastructures import FormData, UploadFile

from services.core.db.models import DocumentStatus
from services.gateway.compat.errors import DetailError, detail_errors
from services.gateway.compat.inproc import ApiError, Upload, open_api, wait_until_final
from services.gateway.compat.unstructured_elements import Options, to_elements
from services.gateway.mcp.mount import bearer_key

TAG = "unstructured-compatible"
router = APIRouter(tags=[TAG])
PARTITION_WAIT_S = 900.0
STRATEGY_MODES = {"fast": "fast", "auto": None, "hi_res": None, "vlm": "accurate"}  # None: the server's default
CLIENT_ONLY = frozenset({"split_pdf_page", "split_pdf_allow_failed", "split_pdf_concurrency_level",
                         "split_pdf_cache_tmp_data", "split_pdf_cache_tmp_data_dir", "split_pdf_page_range[]",
                         "split_pdf_page_range"})
CHUNKING_ONLY = frozenset({"combine_under_n_chars", "max_characters", "new_after_n_chars", "overlap", "overlap_all",
                           "multipage_sections", "similarity_threshold", "include_orig_elements"})
# Given only at the value that means "as pagemill does anyway".
AT_DEFAULT = {"include_slide_notes": "true", "xml_keep_tags": "false", "extract_image_block_types[]": "",
              "skip_infer_table_types[]": "", "do_not_break_similarity_on_footer_header": "false"}
HANDLED = frozenset({"files", "strategy", "coordinates", "include_page_breaks", "unique_element_ids",
                     "starting_page_number", "languages[]", "ocr_languages[]", "output_format",
                     "pdf_infer_table_structure", "content_type"})
KNOWN_UNSUPPORTED = frozenset({"chunking_strategy", "hi_res_model_name", "pdfminer_char_margin",
                               "pdfminer_line_margin", "pdfminer_line_overlap", "pdfminer_word_margin",
                               "table_ocr_agent", "vlm_model", "vlm_model_provider", "gz_uncompressed_content_type",
                               "encoding"})
FORM_FIELDS = sorted(HANDLED | CLIENT_ONLY | CHUNKING_ONLY | set(AT_DEFAULT) | KNOWN_UNSUPPORTED)

PARTITION_BODY: dict[str, Any] = {"required": True, "content": {"multipart/form-data": {"schema": {
    "type": "object", "required": ["files"],
    "properties": {
        "files": {"type": "string", "format": "binary", "description": "the document (what POST /v1/documents "
                                                                        "takes)"},
        "strategy": {"type": "string", "enum": list(STRATEGY_MODES), "default": "hi_res",
                     "description": "fast: mode=fast; vlm: mode=accurate; auto, hi_res: the server's default mode"},
        "coordinates": {"type": "boolean", "default": False, "description": "boxes in PixelSpace at 72 dpi"},
        "include_page_breaks": {"type": "boolean", "default": False},
        "unique_element_ids": {"type": "boolean", "default": False},
        "starting_page_number": {"type": "integer", "minimum": 1, "default": 1},
        "languages[]": {"type": "array", "items": {"type": "string"}, "description": "copied to the elements' "
                                                                                      "metadata.languages"},
        "output_format": {"type": "string", "enum": ["application/json"], "default": "application/json"},
        "pdf_infer_table_structure": {"type": "boolean", "default": True,
                                      "description": "false: tables without metadata.text_as_html"},
    },
    "description": "Also taken: the client's own split_pdf_* fields; chunking parameters (inert: chunking_strategy "
                   "is refused); include_slide_notes, xml_keep_tags, extract_image_block_types[], "
                   "skip_infer_table_types[] at their defaults. Refused (400 unsupported_option): "
                   + ", ".join(sorted(KNOWN_UNSUPPORTED)) + "; any other field (400 unknown_option).",
}}}}
ERRORS = detail_errors(400, 401, 413, 415, 422, 429, 503, 504)
UnstructuredError = DetailError


def _bool(form: FormData, name: str, default: bool) -> bool:
    raw = str(form.get(name) or "").strip().lower()
    if not raw:
        return default
    if raw not in ("true", "false"):
        raise UnstructuredError(400, "validation_error", f"{name}: must be true or false")
    return raw == "true"


def _check_options(form: FormData) -> None:
    names = set(form.keys())
    if unknown := sorted(names - set(FORM_FIELDS)):
        raise UnstructuredError(400, "unknown_option", f"{', '.join(unknown)}: not a partition parameter")
    given = {name for name in names & KNOWN_UNSUPPORTED if any(str(v).strip() for v in form.getlist(name))}
    for name, default in AT_DEFAULT.items():
        if any(str(value).strip().lower() != default for value in form.getlist(name)):
            given.add(name)
    if given:
        raise UnstructuredError(400, "unsupported_option", f"{', '.join(sorted(given))}: not supported by pagemill "
                                                           "(leave at the default)")
    output_format = str(form.get("output_format") or "application/json")
    if output_format != "application/json":
        raise UnstructuredError(400, "unsupported_option", "output_format: only application/json is supported")


def _partition_request(form: FormData) -> tuple[Upload, dict[str, str], Options, bool]:
    _check_options(form)
    file = form.get("files")
    if not isinstance(file, UploadFile):
        raise UnstructuredError(400, "validation_error", "files: a file is required")
    strategy = str(form.get("strategy") or "hi_res").strip().lower()
    if strategy not in STRATEGY_MODES:
        raise UnstructuredError(400, "unsupported_option", f"strategy: {strategy} is not supported; use one of "
                                                           f"{', '.join(STRATEGY_MODES)}")
    try:
        starting_page = int(str(form.get("starting_page_number") or "1"))
    except ValueError:
        starting_page = 0
    if starting_page < 1:
        raise UnstructuredError(400, "validation_error", "starting_page_number: must be a whole number ≥ 1")
    mode = STRATEGY_MODES[strategy]
    filename = file.filename or "document"
    options = Options(filename=filename, filetype=file.content_type or "application/octet-stream",
                      coordinates=_bool(form, "coordinates", False),
                      include_page_breaks=_bool(form, "include_page_breaks", False),
                      unique_element_ids=_bool(form, "unique_element_ids", False), starting_page_number=starting_page,
                      languages=tuple(str(v) for v in form.getlist("languages[]") if str(v).strip()))
    return Upload(filename, b""), {"mode": mode} if mode else {}, options, _bool(form, "pdf_infer_table_structure",
                                                                                True)


def _key(request: Request) -> str:
    return (request.headers.get("unstructured-api-key") or "").strip() or bearer_key(request.headers)


@router.post("/general/v0/general", summary="Partition a document (Unstructured API)", responses=ERRORS,
             openapi_extra={"requestBody": PARTITION_BODY,
                            "security": [{"UnstructuredApiKey": []}, {"ApiKey": []}]},
             response_model=list[dict[str, Any]])
async def partition(request: Request) -> JSONResponse:
    """What `unstructured-client`'s `general.partition` calls: the file is parsed by pagemill (waiting up to 15
    minutes) and answered as a list of Unstructured elements. A failed document answers 422 with its error code;
    a partial one the pages that succeeded."""
    key = _key(request)
    if not key:
        return UnstructuredError(401, "unauthorized", "API key is missing, please provide an API key in the "
                                                      "header.").response()
    try:
        async with open_api(request, key) as api:
            await api.documents(limit=1, cursor=None, status=None)  # the key, before the body is read
            form = await request.form(max_files=1, max_fields=100)
            try:
                upload, fields, options, table_html = _partition_request(form)
                file = form["files"]
                assert isinstance(file, UploadFile)
                upload = Upload(upload.filename, await file.read())
            finally:
                await form.close()
            created = await api.submit(upload, fields)
            state = await wait_until_final(api, created["id"], PARTITION_WAIT_S)
            if state["status"] in (DocumentStatus.FAILED, DocumentStatus.CANCELLED) and not state["pages_done"]:
                error = state.get("error") or {"code": state["status"], "message": "the document did not finish"}
                raise UnstructuredError(422, error["code"], error["message"])
            result = await api.result(created["id"], "json")
    except ApiError as exc:
        return UnstructuredError(exc.status, exc.code, exc.message).response()
    except UnstructuredError as exc:
        return exc.response()
    elements = to_elements(result, options)
    if not table_html:
        for element in elements:
            element["metadata"].pop("text_as_html", None)
    return JSONResponse(elements, headers={"X-Pagemill-Document-Id": created["id"]})


@router.get("/general/docs", summary="The partition API's probe (answers 200)")
async def partition_docs() -> dict[str, str]:
    """`unstructured-client` sends this request before it splits a PDF into page ranges; it answers where the
    partition route and its documentation are."""
    return {"partition": "/general/v0/general", "documentation": "/docs#tag/unstructured-compatible"}
