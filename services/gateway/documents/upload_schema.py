"""The OpenAPI description of `POST /v1/documents`: the route reads its multipart body itself (streaming, after
the key is checked), so the form is declared here, with the limits the server enforces."""

from __future__ import annotations

from typing import Any

from services.core.document_tasks import MAX_LANGUAGE_CHARS, MAX_SCHEMA_BYTES, TaskKind
from services.core.selection import MAX_PAGES_SPEC_CHARS
from services.gateway.documents.schemas import ErrorResponse
from services.gateway.documents.service import MAX_METADATA_BYTES, MODES

MAX_IDEMPOTENCY_KEY_CHARS = 255
MAX_WEBHOOK_URL_CHARS = 2048
ACCEPTED_MEDIA_TYPES = ("application/pdf", "image/png", "image/jpeg", "image/tiff", "image/webp")
FILE_SIZE_EXTENSION = "x-max-bytes"  # filled in from PAGEMILL_LIMITS__MAX_FILE_BYTES when the schema is built

UPLOAD_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorResponse} for code in (400, 401, 408, 409, 413, 415, 422, 429, 503)
}

UPLOAD_REQUEST_BODY: dict[str, Any] = {
    "required": True,
    "content": {"multipart/form-data": {
        "schema": {
            "type": "object",
            "required": ["file"],
            "additionalProperties": False,  # another field: 422 validation_error naming the fields below
            "properties": {
                "file": {"type": "string", "format": "binary", "description":
                         "PDF, PNG, JPEG, TIFF or WebP, recognised by its bytes (not its name or Content-Type); "
                         "larger than the size limit (`x-max-bytes`; a tenant's own limit may be lower): "
                         "413 file_too_large", FILE_SIZE_EXTENSION: 0},
                "pages": {"type": "string", "maxLength": MAX_PAGES_SPEC_CHARS,
                          "description": "1-based pages to parse, e.g. '1-3,7' (default: every page)"},
                "metadata": {"type": "string", "maxLength": MAX_METADATA_BYTES, "contentMediaType": "application/json",
                             "description": "a JSON object (≤ 16 KiB, ≤ 32 levels, finite numbers), returned "
                                            "untouched"},
                "mode": {"type": "string", "enum": list(MODES)},
                "cache": {"type": "boolean", "default": True,
                          "description": "false: do not answer from the result cache"},
                "do_not_cache": {"type": "boolean", "default": False,
                                 "description": "true: never answer later uploads with this one"},
                "webhook_url": {"type": "string", "format": "uri", "maxLength": MAX_WEBHOOK_URL_CHARS,
                                "pattern": "^https?://", "description": "receives this document's events, signed"},
                "figures": {"type": "boolean", "default": True,
                            "description": "false: keep no figure images (figures stay placeholders in the "
                                           "results)"},
                "merge_tables": {"type": "boolean", "default": True,
                                 "description": "false: a table that goes on over the next page stays two tables "
                                                "(true: one table with `parts`, each page's rows and box)"},
                "furniture": {"type": "string", "enum": ["drop", "keep"], "default": "drop",
                              "description": "keep: page headers, footers and page numbers stay in the Markdown, "
                                             "HTML, LaTeX and chunks, marked as such (drop: only the JSON has "
                                             "them)"},
                "task": {"type": "string", "enum": [k.value for k in TaskKind], "default": "parse",
                         "description": "parse; or parse, then a model answer: translate (target_language), "
                                        "extract (schema), summarize. Without a vLLM engine: 422 "
                                        "task_needs_model"},
                "target_language": {"type": "string", "maxLength": MAX_LANGUAGE_CHARS,
                                    "description": "task=translate: the language to translate into"},
                "schema": {"type": "string", "maxLength": MAX_SCHEMA_BYTES, "contentMediaType": "application/json",
                           "description": "task=extract: a JSON Schema object (draft 2020-12 unless `$schema` "
                                          "says otherwise; local $ref only); invalid: 422 invalid_json_schema"},
            },
        },
        "encoding": {"file": {"contentType": ", ".join(ACCEPTED_MEDIA_TYPES)}},
    }},
}


# The form's fields, as the schema above declares them: the upload refuses any other.
UPLOAD_FIELDS = frozenset(UPLOAD_REQUEST_BODY["content"]["multipart/form-data"]["schema"]["properties"])


def set_file_limit(schema: dict[str, Any], max_file_bytes: int) -> None:
    """Writes the platform's size limit into the built schema of the upload."""
    post = schema.get("paths", {}).get("/v1/documents", {}).get("post", {})
    form = post.get("requestBody", {}).get("content", {}).get("multipart/form-data", {}).get("schema", {})
    if "file" in form.get("properties", {}):
        form["properties"]["file"][FILE_SIZE_EXTENSION] = max_file_bytes
