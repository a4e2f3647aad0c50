"""The one error tree of pagemill; the gateway renders every `PagemillError` the same way.

    PagemillError (500 internal_error)
    ├── InputError (4xx: the request is wrong, retrying it will not help)
    │   ├── UnsupportedMediaType   415 unsupported_media_type
    │   ├── FileTooLarge           413 file_too_large
    │   ├── RequestTimeout         408 request_timeout (the upload's body stalled or crawled)
    │   ├── TooManyPages           422 too_many_pages
    │   ├── EncryptedPdf           422 encrypted_pdf
    │   ├── CorruptDocument        422 corrupt_document
    │   ├── EmptyDocument          422 empty_document
    │   ├── ValidationFailed       422 validation_error
    │   │   ├── InvalidJsonSchema  422 invalid_json_schema (an `extract` task's `schema`)
    │   │   └── BatchEmpty         422 batch_empty (every item of a batch was refused)
    │   ├── TaskNeedsModel         422 task_needs_model (translate/extract/summarize without a vLLM engine)
    │   ├── NotFound               404 not_found
    │   ├── ResultNotReady         409 result_not_ready
    │   ├── ResultExpired          410 result_expired
    │   ├── ImageTooLarge          422 image_too_large (a page image to show needs more pixels than the budget)
    │   ├── Unauthorized           401 unauthorized (no, unknown or revoked API key)
    │   ├── Forbidden              403 forbidden (the admin API is off, or a tenant's key on it)
    │   ├── IdempotencyConflict    409 idempotency_conflict
    │   ├── RateLimited            429 rate_limited (with Retry-After)
    │   └── UnsafeDocument         422 (an office document refused before or by its conversion)
    │       ├── ZipBomb            422 zip_bomb
    │       ├── XmlEntities        422 xml_entities (DTD entity declarations: billion laughs, XXE)
    │       ├── TooDeeplyNested    422 too_deeply_nested
    │       ├── ConversionTimeout  422 conversion_timeout
    │       └── ConversionFailed   422 conversion_failed
    ├── PageError (a page cannot be parsed; recorded on the page, never raised to a client)
    │   └── PageTooLarge           page_too_large
    ├── EngineUnavailable (503 engine_unavailable, retryable: the engine's backend is down or busy)
    └── ServiceUnavailable (503 service_unavailable + Retry-After: Redis or another dependency is down)
"""

from __future__ import annotations

import math

MESSAGE_CHARS = 300  # an error message kept in a log line, a page's error or a client's answer
DETAIL_CHARS = 500  # the longer cut, for a failure recorded on a document, a delivery or a task


def clip(message: str, limit: int = MESSAGE_CHARS) -> str:
    """`message` cut to `limit` characters: what a log line, a stored error or an answer carries."""
    return message[:limit]


def describe(exc: BaseException, limit: int = MESSAGE_CHARS) -> str:
    """`Type: message` of an exception, clipped: how a failure is logged or recorded."""
    return clip(f"{type(exc).__name__}: {exc}", limit)


class PagemillError(Exception):
    status_code: int = 500
    code: str = "internal_error"
    retryable: bool = False

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or self.__class__.__doc__ or self.code)

    @property
    def headers(self) -> dict[str, str]:
        """Extra response headers (Retry-After, WWW-Authenticate)."""
        return {}

    @property
    def message(self) -> str:
        return str(self)


class InputError(PagemillError):
    status_code = 400
    code = "bad_request"


class UnsupportedMediaType(InputError):
    """The file is not a PDF, PNG, JPEG, TIFF or WebP."""

    status_code = 415
    code = "unsupported_media_type"


class FileTooLarge(InputError):
    """The file is larger than the size limit."""

    status_code = 413
    code = "file_too_large"


class RequestTimeout(InputError):
    """The request body arrived too slowly; send it again at a usable rate."""

    status_code = 408
    code = "request_timeout"


class TooManyPages(InputError):
    """The document has more pages than the page limit."""

    status_code = 422
    code = "too_many_pages"


class EncryptedPdf(InputError):
    """The PDF is protected by a password."""

    status_code = 422
    code = "encrypted_pdf"


class CorruptDocument(InputError):
    """The file cannot be opened as a document."""

    status_code = 422
    code = "corrupt_document"


class EmptyDocument(InputError):
    """The document has no pages (or no bytes)."""

    status_code = 422
    code = "empty_document"


class ValidationFailed(InputError):
    """A request field is invalid."""

    status_code = 422
    code = "validation_error"


class InvalidJsonSchema(ValidationFailed):
    """The `schema` of an `extract` task is not a JSON Schema pagemill can hold the answer to."""

    code = "invalid_json_schema"


class TaskNeedsModel(InputError):
    """The task needs a language model, and this deployment runs no vLLM engine."""

    status_code = 422
    code = "task_needs_model"


class BatchEmpty(ValidationFailed):
    """Every file and URL of a batch was refused."""

    code = "batch_empty"


class NotFound(InputError):
    """No such resource."""

    status_code = 404
    code = "not_found"


class ResultNotReady(InputError):
    """The document has not finished yet."""

    status_code = 409
    code = "result_not_ready"


class ResultExpired(InputError):
    """The document's stored data was deleted when its retention period ended."""

    status_code = 410
    code = "result_expired"


class ImageTooLarge(InputError):
    """A stored page image would take more pixels to decode than the gateway spends on showing one."""

    status_code = 422
    code = "image_too_large"


class Unauthorized(InputError):
    """A valid API key is required: `Authorization: Bearer <key>`."""

    status_code = 401
    code = "unauthorized"

    @property
    def headers(self) -> dict[str, str]:
        return {"WWW-Authenticate": "Bearer"}


class Forbidden(InputError):
    """This operation is not allowed."""

    status_code = 403
    code = "forbidden"


class IdempotencyConflict(InputError):
    """The Idempotency-Key was already used with a different request body."""

    status_code = 409
    code = "idempotency_conflict"


class RateLimited(InputError):
    """A limit of the tenant was reached; try again after Retry-After seconds."""

    status_code = 429
    code = "rate_limited"

    def __init__(self, message: str | None = None, *, retry_after_s: float = 1.0, limit: str = "") -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s
        self.limit = limit

    @property
    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(max(1, math.ceil(self.retry_after_s)))}


class UnsafeDocument(InputError):
    """The document cannot be converted safely."""

    status_code = 422
    code = "unsafe_document"


class ZipBomb(UnsafeDocument):
    """The archive would expand far beyond its size (a ZIP bomb)."""

    code = "zip_bomb"


class XmlEntities(UnsafeDocument):
    """The document declares XML entities (entity expansion or external entities)."""

    code = "xml_entities"


class TooDeeplyNested(UnsafeDocument):
    """The document nests its elements deeper than the converter may follow."""

    code = "too_deeply_nested"


class ConversionTimeout(UnsafeDocument):
    """The converter did not finish within its time limit."""

    code = "conversion_timeout"


class ConversionFailed(UnsafeDocument):
    """The converter could not turn the document into pages."""

    code = "conversion_failed"


class PageError(PagemillError):
    """A page cannot be parsed."""

    code = "page_error"


class PageTooLarge(PageError):
    """The page is too large to render within the memory bound."""

    code = "page_too_large"


class EngineUnavailable(PagemillError):
    """The engine's backend is down or overloaded; the page waits and tries again."""

    status_code = 503
    code = "engine_unavailable"
    retryable = True


class ServiceUnavailable(PagemillError):
    """A service pagemill depends on (Redis, the database) cannot be reached; try again after Retry-After."""

    status_code = 503
    code = "service_unavailable"
    retryable = True

    def __init__(self, message: str | None = None, *, retry_after_s: float = 5.0) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s

    @property
    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(max(1, math.ceil(self.retry_after_s)))}
