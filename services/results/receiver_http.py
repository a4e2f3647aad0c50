"""One webhook attempt over HTTP, bounded in time and in memory, whatever the receiver does.

httpx's timeouts apply to each connect, read and write on its own: a receiver that answers 200 and then
sends one byte every few seconds (or drips its headers) keeps an attempt open for as long as it likes. Here
every socket operation of an attempt waits at most until the attempt's deadline, so the attempt ends then
and its thread is free again. Only the first `MAX_BODY_BYTES` of the answer are read (a receiver's body is
kept as a short excerpt in the delivery log, nothing more); the connection is closed with the rest unread.
"""

from __future__ import annotations

import threading
import time
import typing
from dataclasses import dataclass

import httpcore
import httpx

MAX_BODY_BYTES = 4096
USER_AGENT = "pagemill-webhooks/1"

_attempt = threading.local()  # `deadline` (time.monotonic()) of the attempt this thread is sending


def _bounded(timeout: float | None, error: type[Exception]) -> float | None:
    """The timeout of one socket operation: what httpx asked for, but never past the attempt's deadline."""
    deadline: float | None = getattr(_attempt, "deadline", None)
    if deadline is None:
        return timeout
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise error("the attempt's deadline has passed")
    return remaining if timeout is None else min(timeout, remaining)


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, stream: httpcore.NetworkStream) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _bounded(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _bounded(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, ssl_context: typing.Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        return _DeadlineStream(self._stream.start_tls(ssl_context, server_hostname,
                                                      _bounded(timeout, httpcore.ConnectTimeout)))

    def get_extra_info(self, info: str) -> typing.Any:
        return self._stream.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    def __init__(self) -> None:
        self._backend = httpcore.SyncBackend()

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: typing.Iterable[typing.Any] | None = None) -> httpcore.NetworkStream:
        return _DeadlineStream(self._backend.connect_tcp(host, port, _bounded(timeout, httpcore.ConnectTimeout),
                                                         local_address, socket_options))

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: typing.Iterable[typing.Any] | None = None) -> httpcore.NetworkStream:
        return _DeadlineStream(self._backend.connect_unix_socket(path, _bounded(timeout, httpcore.ConnectTimeout),
                                                                 socket_options))

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


class _DeadlineTransport(httpx.HTTPTransport):
    """httpx's own transport (its error mapping, TLS, keep-alive) on a pool whose sockets obey the deadline."""

    def __init__(self) -> None:
        ssl_context = httpx.create_ssl_context()  # loading the CA bundle takes a while: once per process
        super().__init__(verify=ssl_context)
        self._pool = httpcore.ConnectionPool(ssl_context=ssl_context, network_backend=_DeadlineBackend())


@dataclass(frozen=True, slots=True)
class Answer:
    status_code: int
    excerpt: str  # the first bytes of the body, decoded leniently
    body_bytes_read: int


_client: httpx.Client | None = None


def http_client() -> httpx.Client:
    global _client
    if _client is None:
        # identity: a compressed answer would be inflated past the byte cap before anyone could count it
        _client = httpx.Client(transport=_DeadlineTransport(), follow_redirects=False,
                               headers={"user-agent": USER_AGENT, "accept-encoding": "identity"})
    return _client


def post(url: str, body: bytes, headers: dict[str, str], *, deadline_s: float) -> Answer:
    """POSTs `body` and returns the status with the start of the answer, all within `deadline_s` seconds.

    Raises an `httpx.HTTPError` (a timeout one at the deadline) when no status line and headers came in time.
    A body still arriving at the deadline is cut there: the status already tells the outcome.
    """
    client = http_client()  # made before the clock starts: the first attempt of a process pays for it
    _attempt.deadline = time.monotonic() + deadline_s
    try:
        with client.stream("POST", url, content=body, headers=headers, timeout=deadline_s) as response:
            received = bytearray()
            try:
                for chunk in response.iter_raw():
                    received += chunk
                    if len(received) >= MAX_BODY_BYTES:
                        break  # leaving the block closes the connection with the rest unread
            except httpx.TimeoutException:
                pass
            excerpt = bytes(received[:MAX_BODY_BYTES]).decode(response.encoding or "utf-8", errors="replace")
            return Answer(response.status_code, excerpt, len(received))
    finally:
        _attempt.deadline = None
