"""Real HTTP webhook receivers on 127.0.0.1: one that verifies signatures and can fail on purpose, and one
that accepts connections and never answers."""

from __future__ import annotations

import json
import socket
import threading
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
