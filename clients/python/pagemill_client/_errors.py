"""The SDK's errors: one class per API error code, so `except pagemill_client.RateLimited` reads like the docs.

    PagemillError
    ├── APIConnectionError        the server could not be reached, or the connection dropped (after retries)
    ├── WaitTimeout               wait() gave up before the document ended
    ├── DocumentFailed            parse(): the document ended failed or cancelled (`.document` has the details)
    ├── WebhookVerificationError  verify_webhook(): bad signature, missing header or a stale timestamp
    └── APIError                  an `{"error": {"code", "message"}}` answer (`.status_code`, `.code`, `.request_id`)
        ├── UnsupportedMediaType   415 unsupported_media_type
        ├── FileTooLarge           413 file_too_large
        ├── TooManyPages           422 too_many_pages
        ├── EncryptedPdf           422 encrypted_pdf
        ├── CorruptDocument        422 corrupt_document
        ├── EmptyDocument          422 empty_document
        ├── ValidationError        422 validation_error
        ├── NotFound               404 not_found
        ├── ResultNotReady         409 result_not_ready
        ├── ResultExpired          410 result_expired
        ├── Unauthorized           401 unauthorized
        ├── Forbidden              403 forbidden
        ├── IdempotencyConflict    409 idempotency_conflict
        ├── RateLimited            429 rate_limited (`.retry_after` seconds)
        ├── InternalError          500 internal_error
        └── EngineUnavailable      503 engine_unavailable
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pagemill_client._models import Document, DocumentRead


class PagemillError(Exception):
    """Every error the SDK raises."""


class APIConnectionError(PagemillError):
    pass


class WaitTimeout(PagemillError):
    def __init__(self, message: str, document: DocumentRead | None = None) -> None:
        super().__init__(message)
        self.document = document


class DocumentFailed(PagemillError):
    def __init__(self, document: Document) -> None:
        reason = f": {document.error.code}: {document.error.message}" if document.error else ""
        super().__init__(f"document {document.id} ended {document.status}{reason}")
        self.document = document


class WebhookVerificationError(PagemillError):
    pass


class APIError(PagemillError):
    status_code: int = 0
    code: str = "error"

    def __init__(self, message: str, *, status_code: int, code: str, request_id: str | None = None,
                 retry_after: float | None = None, body: Any = None) -> None:
        super().__init__(f"{status_code} {code}: {message}")
        self.message, self.status_code, self.code = message, status_code, code
        self.request_id, self.retry_after, self.body = request_id, retry_after, body


class UnsupportedMediaType(APIError):
    code = "unsupported_media_type"


class FileTooLarge(APIError):
    code = "file_too_large"


class TooManyPages(APIError):
    code = "too_many_pages"


class EncryptedPdf(APIError):
    code = "encrypted_pdf"


class CorruptDocument(APIError):
    code = "corrupt_document"


class EmptyDocument(APIError):
    code = "empty_document"


class ValidationError(APIError):
    code = "validation_error"


class NotFound(APIError):
    code = "not_found"


class ResultNotReady(APIError):
    code = "result_not_ready"


class ResultExpired(APIError):
    code = "result_expired"


class Unauthorized(APIError):
    code = "unauthorized"


class Forbidden(APIError):
    code = "forbidden"


class IdempotencyConflict(APIError):
    code = "idempotency_conflict"


class RateLimited(APIError):
    code = "rate_limited"


class InternalError(APIError):
    code = "internal_error"


class EngineUnavailable(APIError):
    code = "engine_unavailable"


ERRORS_BY_CODE: dict[str, type[APIError]] = {
    cls.code: cls for cls in (
        UnsupportedMediaType, FileTooLarge, TooManyPages, EncryptedPdf, CorruptDocument, EmptyDocument,
        ValidationError, NotFound, ResultNotReady, ResultExpired, Unauthorized, Forbidden, IdempotencyConflict,
        RateLimited, InternalError, EngineUnavailable)
}
