"""Real HTTP webhook receivers on 127.0.0.1: one that verifies signatures and can fail on purpose, one that
accepts connections and never answers, one that drips its answer a byte at a time, one with a huge answer."""

from __future__ import annotations

import contextlib
import json
import select
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from services.core.webhooks import verify


@dataclass
class Received:
    headers: dict[str, str]
    body: str
    verified: bool
    answered: int

    @property
    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Receiver:
    """Answers 500 to its first `fail_first` requests (and to the first `fail_times` of type `fail_event`),
    then 204 — or 200 with the request's body when `echo` is set, as some receivers do; records every request."""

    secret: str = ""
    fail_first: int = 0
    fail_event: str = ""
    fail_times: int = 0
    echo: bool = False
    received: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # the http.server API
                body = self.rfile.read(int(self.headers.get("content-length", 0))).decode()
                headers = {k.lower(): v for k, v in self.headers.items()}
                with receiver.lock:
                    status = 200 if receiver.echo else 204
                    if len(receiver.received) < receiver.fail_first or receiver._fails_event(body):
                        status = 500
                    receiver.received.append(Received(headers, body, verify(receiver.secret, headers, body), status))
                answer = body.encode() if status == 200 else b""
                self.send_response(status)
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *_: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def _fails_event(self, body: str) -> bool:
        if not self.fail_event or json.loads(body).get("type") != self.fail_event:
            return False
        return sum(r.json["type"] == self.fail_event for r in self.received) < self.fail_times

    def of_type(self, event_type: str) -> list[Received]:
        with self.lock:
            return [r for r in self.received if r.json["type"] == event_type]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class SilentReceiver:
    """A listening socket nobody accepts from: connections open, requests go out, no answer ever comes."""

    def __init__(self) -> None:
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.socket.listen(64)
        self.url = f"http://127.0.0.1:{self.socket.getsockname()[1]}/hooks"

    def close(self) -> None:
        self.socket.close()


@dataclass
class Connection:
    """One request a raw receiver took: its `webhook-id`, when it came in and when the sender hung up
    (monotonic seconds), and the answer bytes the kernel accepted for it before then."""

    webhook_id: str
    opened: float
    closed: float | None = None
    bytes_sent: int = 0
    sock: socket.socket | None = field(default=None, repr=False, compare=False)


class _RawReceiver:
    """A threaded TCP server speaking just enough HTTP/1.1 to take a webhook and answer it its own way."""

    def __init__(self) -> None:
        self.connections: list[Connection] = []
        self.open_now = 0
        self.max_open = 0
        self.changed = threading.Condition()
        self.server = socket.socket()
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(64)
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}/hooks"
        self.stopped = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        with client:
            webhook_id = _read_request(client)
            connection = Connection(webhook_id, time.monotonic(), sock=client)
            with self.changed:
                # A sender that hung up on another connection before this one came is counted out first, from the
                # kernel's state of that socket: its own thread may not have woken to its end yet.
                for other in self.connections:
                    if other.closed is None and other.sock is not None and _hung_up(other.sock):
                        self._ended(other)
                self.connections.append(connection)
                self.open_now += 1
                self.max_open = max(self.max_open, self.open_now)
                self.changed.notify_all()
            with contextlib.suppress(OSError):  # the sender hung up
                self.answer(client, connection)
            with self.changed:
                if connection.closed is None:
                    self._ended(connection)
                self.changed.notify_all()

    def _ended(self, connection: Connection) -> None:
        """Counts `connection` closed now (its socket stays open until its own thread has let go of it)."""
        connection.closed = time.monotonic()
        self.open_now -= 1

    def answer(self, client: socket.socket, connection: Connection) -> None:
        raise NotImplementedError

    def wait_for(self, check: Any, timeout: float, what: str) -> Any:
        """Waits for `check()` to hold, woken by every connection that opens or closes."""
        with self.changed:
            if not self.changed.wait_for(check, timeout):
                raise AssertionError(f"timed out waiting for {what}")
            return check()

    def close(self) -> None:
        self.stopped.set()
        self.server.close()


def _hung_up(client: socket.socket) -> bool:
    """Has the sender closed this connection? Its end of stream (or reset) is waiting in the socket, unread."""
    try:
        return client.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False  # open, nothing sent
    except OSError:
        return True  # reset by the sender


def _read_request(client: socket.socket) -> str:
    """Reads one request (headers and a Content-Length body); returns its `webhook-id`."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = client.recv(65536)
        if not chunk:
            return ""
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    fields = dict(line.split(":", 1) for line in head.decode("latin-1").split("\r\n")[1:] if ":" in line)
    fields = {k.strip().lower(): v.strip() for k, v in fields.items()}
    remaining = int(fields.get("content-length", "0")) - len(body)
    while remaining > 0:
        chunk = client.recv(min(remaining, 65536))
        if not chunk:
            break
        remaining -= len(chunk)
    return fields.get("webhook-id", "")


class DripReceiver(_RawReceiver):
    """Answers `200` at once, then sends its body one byte every `every_s` seconds for up to `hold_s` seconds,
    hanging up only when the sender does (or at `hold_s`)."""

    def __init__(self, every_s: float = 0.5, hold_s: float = 60.0) -> None:
        self.every_s, self.hold_s = every_s, hold_s
        super().__init__()

    def answer(self, client: socket.socket, connection: Connection) -> None:
        client.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 1000000\r\n\r\n")
        end = time.monotonic() + self.hold_s
        while time.monotonic() < end:
            readable, _, _ = select.select([client], [], [], self.every_s)
            if readable and not client.recv(1):
                return  # the sender closed the connection
            connection.bytes_sent += client.send(b".")


class HugeReceiver(_RawReceiver):
    """Answers `200` with a body of `size` bytes, written as fast as the sender reads it."""

    def __init__(self, size: int) -> None:
        self.size = size
        super().__init__()

    def answer(self, client: socket.socket, connection: Connection) -> None:
        client.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 * 1024)
        client.sendall(f"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {self.size}\r\n\r\n".encode())
        block = b"x" * 65536
        while connection.bytes_sent < self.size:
            connection.bytes_sent += client.send(block[:self.size - connection.bytes_sent])
