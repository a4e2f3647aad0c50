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
    return any(cls.__name__ in _TRANSIENT_NAMES for cls in type(exc).__mro__)
