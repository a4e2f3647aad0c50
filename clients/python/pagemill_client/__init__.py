"""pagemill's Python SDK: `Client(...).parse("report.pdf").markdown`, with retries, idempotent uploads, live
progress and typed results and errors. `AsyncClient` is the same, awaited; `verify_webhook` checks webhooks."""

from pagemill_client._async_client import AsyncClient
from pagemill_client._base import RetryPolicy
from pagemill_client._batches import BatchCreated, BatchDocument, BatchItem, BatchParsed, BatchRead
from pagemill_client._client import Client
from pagemill_client._errors import (
    APIConnectionError,
    APIError,
    CorruptDocument,
    DocumentFailed,
    EmptyDocument,
    EncryptedPdf,
    EngineUnavailable,
    FileTooLarge,
    Forbidden,
    IdempotencyConflict,
    InternalError,
    NotFound,
    PagemillError,
    RateLimited,
    ResultExpired,
    ResultNotReady,
    TooManyPages,
    Unauthorized,
    UnsupportedMediaType,
    ValidationError,
    WaitTimeout,
    WebhookVerificationError,
)
from pagemill_client._models import (
    FORMATS,
    AttachmentRead,
    Document,
    DocumentCreated,
    DocumentDeleted,
    DocumentRead,
    Element,
    ErrorBody,
    Format,
    Furniture,
    Mode,
    PageRead,
    Progress,
    Task,
    UsageLine,
    UsageRead,
)
from pagemill_client._webhooks import verify_webhook

__version__ = "0.1.0"

__all__ = [
    "FORMATS", "APIConnectionError", "APIError", "AsyncClient", "AttachmentRead", "BatchCreated", "BatchDocument",
    "BatchItem", "BatchParsed", "BatchRead", "Client", "CorruptDocument",
    "Document", "DocumentCreated", "DocumentDeleted", "DocumentFailed", "DocumentRead", "Element", "EmptyDocument",
    "EncryptedPdf", "EngineUnavailable", "ErrorBody", "FileTooLarge", "Forbidden", "Format", "Furniture",
    "IdempotencyConflict", "InternalError", "Mode", "NotFound", "PageRead", "PagemillError", "Progress",
    "RateLimited", "ResultExpired", "ResultNotReady", "RetryPolicy", "Task", "TooManyPages", "Unauthorized",
    "UnsupportedMediaType", "UsageLine", "UsageRead", "ValidationError", "WaitTimeout", "WebhookVerificationError",
    "verify_webhook",
]
