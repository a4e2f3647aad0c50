"""What `parse_document` may read, against real files and a real HTTP server on loopback: roots and a symlink that
leads out of them, the URL rules (loopback refused unless allowed), redirects, the size limit and the deadline."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import anyio
import pytest

from services.core.errors import FileTooLarge, NotFound, ValidationFailed
from services.gateway.mcp.sources import SourcePolicy, fetch_url, read_path

BODY = b"%PDF-1.4 test body"


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path.startswith("/hop/"):
            left = int(self.path.rsplit("/", 1)[-1])
            self.send_response(302)
            self.send_header("Location", f"/hop/{left - 1}" if left > 0 else "/file.pdf")
            self.end_headers()
        elif self.path == "/file.pdf":
            self.send_response(200)
            self.send_header("Content-Length", str(len(BODY)))
            self.end_headers()
            self.wfile.write(BODY)
        elif self.path == "/drip":  # a byte at a time, each well within httpx's read timeout
            self.send_response(200)
            self.end_headers()
            try:
                for _ in range(100):
                    self.wfile.write(b"x")
                    self.wfile.flush()
                    time.sleep(0.05)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up at its deadline, as it should
        else:
            self.send_response(404)
            self.end_headers()

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def fetch(policy: SourcePolicy, url: str) -> bytes:
    return anyio.run(fetch_url, policy, url, None).content


def test_loopback_urls_follow_the_webhook_rule(server: str) -> None:
    with pytest.raises(ValidationFailed, match="private, loopback or reserved"):
        fetch(SourcePolicy(), f"{server}/file.pdf")
    with pytest.raises(ValidationFailed, match="http:// or https://"):
        fetch(SourcePolicy(allow_private_urls=True), "file:///etc/passwd")
    upload = anyio.run(fetch_url, SourcePolicy(allow_private_urls=True), f"{server}/file.pdf", None)
    assert (upload.filename, upload.content) == ("file.pdf", BODY)


def test_redirects_are_followed_five_times_at_most(server: str) -> None:
    allowed = SourcePolicy(allow_private_urls=True)
    assert fetch(allowed, f"{server}/hop/4") == BODY  # five redirects
    with pytest.raises(ValidationFailed, match="more than 5 redirects"):
        fetch(allowed, f"{server}/hop/5")


def test_size_limit_and_deadline(server: str) -> None:
    with pytest.raises(FileTooLarge):
        fetch(SourcePolicy(allow_private_urls=True, max_bytes=len(BODY) - 1), f"{server}/file.pdf")
    started = time.monotonic()
    with pytest.raises(ValidationFailed, match="not fetched within 1 s"):
        fetch(SourcePolicy(allow_private_urls=True, fetch_timeout_s=1), f"{server}/drip")
    assert time.monotonic() - started < 3


def test_paths_stay_under_the_roots(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "a.pdf").write_bytes(BODY)
    (outside / "secret.pdf").write_bytes(BODY)
    (root / "link.pdf").symlink_to(outside / "secret.pdf")
    policy = SourcePolicy(roots=(root,))
    assert read_path(policy, "a.pdf").content == BODY and read_path(policy, str(root / "a.pdf")).filename == "a.pdf"
    for escape in ("link.pdf", "../outside/secret.pdf", str(outside / "secret.pdf")):
        with pytest.raises(ValidationFailed, match="outside the folders"):
            read_path(policy, escape)
    with pytest.raises(NotFound):
        read_path(policy, "missing.pdf")
    with pytest.raises(FileTooLarge):
        read_path(SourcePolicy(roots=(root,), max_bytes=4), "a.pdf")
