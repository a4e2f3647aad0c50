"""A fault-injecting HTTP proxy in front of an S3 API (moto's server): pass requests through, answer them with
500/503 S3 errors, or stall them, switched at run time by the test."""

from __future__ import annotations

import http.client
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

ERROR_BODY = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code><Message>injected by the "
              "fault proxy</Message><RequestId>fault</RequestId></Error>")
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection"}


class FaultyS3Proxy:
    """`mode`: "pass", "error" (500 InternalError and 503 SlowDown in turn) or "stall" (hold each request until
    the mode changes, or `stall_s` at most, then pass it on)."""

    def __init__(self, upstream: str, *, stall_s: float = 30.0) -> None:
        target = urlsplit(upstream)
        self.upstream_host, self.upstream_port = target.hostname or "127.0.0.1", target.port or 80
        self.mode = "pass"
        self.stall_s = stall_s
        self.requests = {"pass": 0, "error": 0, "stall": 0}
        self.changed = threading.Condition()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _handle(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0) or 0))
                mode = proxy.mode
                with proxy.changed:
                    proxy.requests[mode] += 1
                if mode == "error":
                    self._error()
                    return
                if mode == "stall":
                    deadline = time.monotonic() + proxy.stall_s
                    with proxy.changed:
                        while proxy.mode == "stall" and time.monotonic() < deadline:
                            proxy.changed.wait(0.2)
                self._forward(body)

            def _error(self) -> None:
                status, code = (500, "InternalError") if proxy.requests["error"] % 2 else (503, "SlowDown")
                payload = ERROR_BODY.format(code=code).encode()
                self.send_response(status)
                self.send_header("content-type", "application/xml")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(payload)

            def _forward(self, body: bytes) -> None:
                upstream = http.client.HTTPConnection(proxy.upstream_host, proxy.upstream_port, timeout=60)
                try:
                    headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
                    upstream.request(self.command, self.path, body=body or None, headers=headers)
                    answer = upstream.getresponse()
                    payload = answer.read()
                    self.send_response(answer.status, answer.reason)
                    for name, value in answer.getheaders():
                        if name.lower() not in HOP_BY_HOP and name.lower() != "content-length":
                            self.send_header(name, value)
                    # A HEAD answer says the object's size, and has no body.
                    size = answer.getheader("content-length") if self.command == "HEAD" else None
                    self.send_header("content-length", size or str(len(payload)))
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(payload)
                finally:
                    upstream.close()

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle

            def log_message(self, *_: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def set_mode(self, mode: str) -> None:
        assert mode in self.requests, mode
        with self.changed:
            self.mode = mode
            self.changed.notify_all()

    def close(self) -> None:
        self.set_mode("pass")
        self.server.shutdown()
        self.server.server_close()
