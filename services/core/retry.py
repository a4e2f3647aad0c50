"""Which failures are worth another try: a backend that blinked, never a document that is wrong."""

from __future__ import annotations

import sqlalchemy.exc

from services.core.errors import PagemillError

_TRANSIENT_NAMES = frozenset({
    # botocore / urllib3 / redis / kombu connection failures, matched by name to keep imports light
    "EndpointConnectionError", "ConnectionClosedError", "ReadTimeoutError", "ConnectTimeoutError",
    "ConnectionError", "TimeoutError", "OperationalError", "BusyLoadingError",
})


def is_retryable(exc: BaseException) -> bool:
    if isinstance(exc, PagemillError):
        return exc.retryable
    if isinstance(exc, sqlalchemy.exc.OperationalError | sqlalchemy.exc.InterfaceError | sqlalchemy.exc.TimeoutError):
        return True
    if isinstance(exc, sqlalchemy.exc.DBAPIError) and (exc.connection_invalidated or _server_away(exc.orig)):
        return True
    if type(exc).__name__ == "ClientError":  # botocore: an S3 API that answered 500/503 after boto's own retries
        return _s3_server_error(getattr(exc, "response", None))
    return any(cls.__name__ in _TRANSIENT_NAMES for cls in type(exc).__mro__)


# SQLSTATEs of a server that is away or restarting (pg8000 reports some of them as ProgrammingError): connection
# exceptions (class 08), admin/crash shutdown and "the database system is starting up" (57P01-03), too many
# connections (53300).
_SERVER_AWAY_STATES = frozenset({"57P01", "57P02", "57P03", "53300"})


def _server_away(error: BaseException | None) -> bool:
    state = getattr(error, "sqlstate", None) or getattr(error, "pgcode", None)
    if state is None and error is not None and error.args and isinstance(error.args[0], dict):
        state = error.args[0].get("C")  # pg8000: the server's error fields
    return isinstance(state, str) and (state.startswith("08") or state in _SERVER_AWAY_STATES)


_S3_TRANSIENT_CODES = frozenset({"InternalError", "ServiceUnavailable", "SlowDown", "RequestTimeout"})


def _s3_server_error(response: object) -> bool:
    if not isinstance(response, dict):
        return False
    status = (response.get("ResponseMetadata") or {}).get("HTTPStatusCode") or 0
    return int(status) >= 500 or (response.get("Error") or {}).get("Code") in _S3_TRANSIENT_CODES
