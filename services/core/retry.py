"""The one retry policy: which failures are worth another try, and how long to wait before it.

    retryable?  a backend that blinked (connection, timeout, a busy engine) — never a document that is wrong
    wait        the n-th retry waits min(max, base · 2ⁿ), plus a random 0–50 % of that (jitter), so pages
                that failed together do not come back together
    cap         every retried thing has a budget: `max_retries` per task message (pages, splits, assemblies),
                `webhooks.max_attempts` per webhook message; a page's deliveries are capped by
                `worker.max_deliveries` whatever brings them back (a lost worker, the reconciler)

Celery does the mechanics: `Task.retry(countdown=…, max_retries=…)` re-publishes the message with its retry
count, and the budget is the task's own `max_retries` option. Celery's `autoretry_for` / `retry_backoff` /
`retry_jitter` do not fit here, for three reasons read in celery/app/autoretry.py (5.x): they match exception
classes while retryability is a predicate over the whole exception chain (`is_retryable`); a page must be
released in the database before its retry is published; and `retry_backoff` is truncated to whole seconds of at
least 1 (`int(max(1.0, retry_backoff))`) with full jitter (a wait anywhere from 0), while the settings promise the
first retry waits `retry_backoff_s`. So the waits are computed here, once, for every task and for webhooks.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import sqlalchemy.exc

from services.core.errors import PagemillError
from services.core.settings import Settings

_TRANSIENT_NAMES = frozenset({
    # botocore / urllib3 / redis / kombu connection failures, matched by name to keep imports light
    "EndpointConnectionError", "ConnectionClosedError", "ReadTimeoutError", "ConnectTimeoutError",
    "ConnectionError", "TimeoutError", "OperationalError", "BusyLoadingError",
})
JITTER = 0.5  # up to this fraction of the wait is added at random
_MAX_EXPONENT = 62  # 2**62 s is past any cap; beyond it the float would overflow


def is_retryable(exc: BaseException) -> bool:
    if isinstance(exc, PagemillError):
        return exc.retryable
    if isinstance(exc, sqlalchemy.exc.DBAPIError):
        return exc.connection_invalidated or _driver_error_is_transient(exc.orig)
    if isinstance(exc, sqlalchemy.exc.TimeoutError):  # no connection free in the pool in time
        return True
    if type(exc).__module__.startswith("psycopg"):  # the driver's own error, not wrapped by SQLAlchemy
        return _driver_error_is_transient(exc)
    if type(exc).__name__ == "ClientError":  # botocore: an S3 API that answered 500/503 after boto's own retries
        return _s3_server_error(getattr(exc, "response", None))
    if type(exc).__name__ == "S3UploadFailedError":  # boto3's managed (multipart) upload wraps the ClientError
        cause = exc.__cause__ or exc.__context__
        return cause is not None and cause is not exc and is_retryable(cause)
    return any(cls.__name__ in _TRANSIENT_NAMES for cls in type(exc).__mro__)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Capped exponential backoff with jitter, and the number of retries it allows."""

    base_s: float
    max_s: float
    max_retries: int
    jitter: float = JITTER

    def nominal_s(self, retries: int) -> float:
        """The wait before retry number `retries + 1`, without jitter: base, 2·base, 4·base… up to max."""
        return float(min(self.max_s, self.base_s * 2 ** min(max(0, retries), _MAX_EXPONENT)))

    def countdown(self, retries: int) -> float:
        """The wait before retry number `retries + 1`: the nominal wait plus 0 to `jitter` of it."""
        return self.nominal_s(retries) * (1 + self.jitter * random.random())

    def allows(self, retries: int) -> bool:
        return retries < self.max_retries


def page_policy(settings: Settings) -> RetryPolicy:
    """Pages, splits and assemblies: a storage or database blip."""
    worker = settings.worker
    return RetryPolicy(worker.retry_backoff_s, worker.retry_backoff_max_s, worker.max_retries)


def engine_outage_policy(settings: Settings) -> RetryPolicy:
    """A page whose engine is down or busy: the same waits, a budget long enough to ride out an outage."""
    worker = settings.worker
    return RetryPolicy(worker.retry_backoff_s, worker.retry_backoff_max_s, worker.unavailable_max_retries)


def webhook_policy(settings: Settings) -> RetryPolicy:
    """Webhook messages: attempts are counted in the database (`webhooks.max_attempts` in all)."""
    hooks = settings.webhooks
    return RetryPolicy(hooks.retry_backoff_s, hooks.retry_backoff_max_s, hooks.max_attempts - 1)


def retry_task(task: Any, exc: BaseException, policy: RetryPolicy) -> Exception:
    """Celery's `Task.retry` with this policy's wait and budget; `raise retry_task(...) from exc`."""
    retry: Exception = task.retry(countdown=policy.countdown(task.request.retries), exc=exc,
                                  max_retries=policy.max_retries)
    return retry


# SQLSTATEs of a server that is away or restarting: connection exceptions (class 08), admin/crash shutdown and
# "the database system is starting up" (57P01-03), too many connections (53300).
_SERVER_AWAY_STATES = frozenset({"57P01", "57P02", "57P03", "53300"})
# A driver error without a SQLSTATE of these classes is the client's own failure to reach the server.
_UNREACHED_NAMES = frozenset({"OperationalError", "InterfaceError"})


def _driver_error_is_transient(error: BaseException | None) -> bool:
    """A DBAPI error (psycopg's or sqlite3's) worth another try.

    When the server answered, its SQLSTATE decides: only a server going away, starting up or full of
    connections is transient. psycopg files many other states under OperationalError too (a deadlock, a
    cancelled statement, a wrong password, a full disk); those are not retried, as before. Without a SQLSTATE
    the server was never heard: psycopg's OperationalError of a refused, cut or timed-out connection, its
    InterfaceError of a connection already closed, and sqlite3's OperationalError of a locked database.
    """
    state = getattr(error, "sqlstate", None)
    if isinstance(state, str):
        return state.startswith("08") or state in _SERVER_AWAY_STATES
    return error is not None and any(cls.__name__ in _UNREACHED_NAMES for cls in type(error).__mro__)


_S3_TRANSIENT_CODES = frozenset({"InternalError", "ServiceUnavailable", "SlowDown", "RequestTimeout"})


def _s3_server_error(response: object) -> bool:
    if not isinstance(response, dict):
        return False
    status = (response.get("ResponseMetadata") or {}).get("HTTPStatusCode") or 0
    return int(status) >= 500 or (response.get("Error") or {}).get("Code") in _S3_TRANSIENT_CODES
