"""Uploads on the wire, against a real gateway: the key and the size limit are checked while the body streams
(never after spooling it), a slow client cannot hold a worker, and Redis being down is a 503, not a 500."""

from __future__ import annotations

import contextlib
import json
import select
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.conftest import PlatformFactory
from tests.harness import Platform
from tests.pdfs import write_padded_pdf
from tests.servers import start_redis

pytestmark = pytest.mark.slow

ONE_PAGE = Path("dev") / "pypdf_crazyones" / "crazyones.pdf"
MIB = 1024 * 1024


def test_redis_down_answers_503_with_retry_after(sqlite_url: str, corpus: Path, tmp_path: Path) -> None:
    redis_url, stop_redis = start_redis(tmp_path)  # a throwaway server of its own, stopped mid-test
    platform = Platform(workdir=tmp_path / "platform", database_url=sqlite_url, redis_base_url=redis_url)
    stopped = False
    try:
        platform.start(worker=False)
        platform.upload(corpus / ONE_PAGE)  # Redis up: accepted
        stop_redis()
        stopped = True
        with platform.client() as client:
            response = client.post("/v1/documents", files={"file": ("c.pdf", (corpus / ONE_PAGE).read_bytes())})
            assert response.status_code == 503, response.text
            assert response.json()["error"]["code"] == "service_unavailable"
            assert int(response.headers["Retry-After"]) >= 1
            assert client.get("/readyz").status_code == 503
    finally:
        platform.stop()
        if not stopped:
            stop_redis()


BOUNDARY = "pagemillboundary7d3f"


def part_head(name: str = "file", filename: str = "big.pdf") -> bytes:
    return (f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{filename}\"\r\n"
            "Content-Type: application/pdf\r\n\r\n").encode()


def chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


class RawUpload:
    """A chunked `POST /v1/documents` on a plain socket, so the test sees exactly how much of the body the
    server took before it answered."""

    def __init__(self, platform: Platform, key: str | None) -> None:
        host, port = platform.url.removeprefix("http://").split(":")
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 * 1024)  # keep the kernel's buffer small
        auth = f"Authorization: Bearer {key}\r\n" if key else ""
        self.sent = 0
        self.answer = b""
        self.sock.sendall((f"POST /v1/documents HTTP/1.1\r\nHost: {host}\r\n{auth}Transfer-Encoding: chunked\r\n"
                           f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n\r\n").encode())

    def send(self, data: bytes) -> bool:
        """Sends one chunk unless the server has answered (or closed); False once it has."""
        if self.answered(0):
            return False
        try:
            self.sock.sendall(chunk(data))
        except OSError:  # closed by the server: its answer is (or was) on the way
            return False
        self.sent += len(data)
        return True

    def finish(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.sendall(chunk(f"\r\n--{BOUNDARY}--\r\n".encode()) + b"0\r\n\r\n")

    def answered(self, timeout: float) -> bool:
        readable, _, _ = select.select([self.sock], [], [], timeout)
        if readable:
            try:
                data = self.sock.recv(65536)
            except OSError:
                data = b""
            self.answer += data
            return True
        return False

    def response(self, timeout: float) -> tuple[int, dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while b"\r\n\r\n" not in self.answer or not self.answer.rstrip().endswith(b"}"):
            if time.monotonic() > deadline:
                raise AssertionError(f"no answer within {timeout} s (got {self.answer[:200]!r})")
            if not self.answered(max(0.0, deadline - time.monotonic())):
                continue
        head, _, body = self.answer.partition(b"\r\n\r\n")
        if b"chunked" in head.lower():
            body = body.split(b"\r\n", 1)[1].rsplit(b"\r\n0\r\n", 1)[0]
        return int(head.split()[1]), json.loads(body.strip())

    def close(self) -> None:
        self.sock.close()


def spooled(spool: Path) -> list[Path]:
    return [p for p in spool.iterdir() if p.name.startswith("pagemill-upload-")]


@pytest.fixture
def gateway(platform_factory: PlatformFactory, sqlite_url: str, tmp_path: Path) -> Platform:
    spool = tmp_path / "spool"
    spool.mkdir()
    return platform_factory(sqlite_url, engine="fake", extra_env={
        "TMPDIR": str(spool), "PAGEMILL_LIMITS__MAX_FILE_BYTES": str(8 * MIB),
        "PAGEMILL_LIMITS__UPLOAD_IDLE_TIMEOUT_S": "2", "PAGEMILL_LIMITS__UPLOAD_MIN_BYTES_PER_S": "2000",
    }).start(worker=False)


@pytest.mark.parametrize("key", [None, "pm_not-a-key"])
def test_no_or_a_bad_key_answers_401_before_the_body(gateway: Platform, key: str | None) -> None:
    upload = RawUpload(gateway, key)
    try:
        # the server may answer from the headers before this first chunk is even sent (send is then False);
        # the rest of a 2 GB body never comes either way: the answer must come from the headers alone
        upload.send(part_head() + b"%PDF-1.7\n" + b"0" * 64 * 1024)
        status, body = upload.response(timeout=10)
        assert (status, body["error"]["code"]) == (401, "unauthorized")
        assert b"connection: close" in upload.answer.lower()
    finally:
        upload.close()
    assert spooled(gateway.workdir.parent / "spool") == []


@pytest.mark.parametrize("tenant_limit", [None, 1 * MIB])
def test_over_the_size_limit_answers_413_while_the_body_streams(gateway: Platform, tenant_limit: int | None) -> None:
    key = gateway.create_tenant("small", max_file_bytes=tenant_limit).key if tenant_limit else gateway.api_key
    limit = tenant_limit or 8 * MIB
    total = 256 * MIB
    upload = RawUpload(gateway, key)
    try:
        upload.send(part_head() + b"%PDF-1.7\n")
        block = b"0" * (64 * 1024)
        while upload.sent < total and upload.send(block):
            pass
        if upload.sent >= total:  # the server took it all: end the body properly so that it can answer
            upload.finish()
        status, body = upload.response(timeout=60)
    finally:
        upload.close()
    print(f"\n413 after {upload.sent / MIB:.1f} MiB sent of {total / MIB:.0f} MiB (limit {limit / MIB:.0f} MiB)")
    assert (status, body["error"]["code"]) == (413, "file_too_large"), body
    # it stopped near the limit (socket buffers hold a few MiB), far from the 256 MiB the client meant to send
    assert upload.sent < limit + 24 * MIB, upload.sent
    assert spooled(gateway.workdir.parent / "spool") == []


def test_a_file_that_is_no_document_answers_415_from_its_first_bytes(gateway: Platform) -> None:
    upload = RawUpload(gateway, gateway.api_key)
    try:
        upload.send(part_head(filename="movie.pdf") + b"GIF89a")
        block = b"x" * (64 * 1024)
        while upload.sent < 256 * MIB and upload.send(block):
            pass
        if upload.sent >= 256 * MIB:
            upload.finish()
        status, body = upload.response(timeout=60)
    finally:
        upload.close()
    assert (status, body["error"]["code"]) == (415, "unsupported_media_type"), body
    assert upload.sent < 24 * MIB, upload.sent
    assert spooled(gateway.workdir.parent / "spool") == []


def test_a_slow_body_is_cut_off_with_408(gateway: Platform) -> None:
    upload = RawUpload(gateway, gateway.api_key)
    try:
        upload.send(part_head() + b"%PDF-1.7\n")
        deadline = time.monotonic() + 30  # bounded: the server must cut it off long before
        while time.monotonic() < deadline and upload.send(b"0" * 50):  # ~500 bytes/s, under the 2,000 minimum
            time.sleep(0.1)
        status, body = upload.response(timeout=10)
    finally:
        upload.close()
    assert (status, body["error"]["code"]) == (408, "request_timeout"), body
    assert time.monotonic() < deadline
    assert spooled(gateway.workdir.parent / "spool") == []


def test_a_stalled_body_is_cut_off_with_408(gateway: Platform) -> None:
    upload = RawUpload(gateway, gateway.api_key)
    try:
        upload.send(part_head() + b"%PDF-1.7\n")  # and then nothing more
        status, body = upload.response(timeout=15)
    finally:
        upload.close()
    assert (status, body["error"]["code"]) == (408, "request_timeout"), body
    with gateway.client() as client:  # the gateway still serves
        assert client.get("/healthz").status_code == 200


def test_a_rate_limited_upload_is_answered_and_closed_cleanly(gateway: Platform) -> None:
    """A 429 comes before the body is read. Closing the connection with the body unread made the kernel reset it,
    and a client could lose the 429 in the reset (the TypeScript SDK's `fetch failed`). A body of up to 1 MiB is
    now read and dropped first: the whole answer arrives, then a clean end of stream, never a reset."""
    key = gateway.create_tenant("throttled", requests_per_minute=1).key
    body = (part_head(filename="a.pdf").replace(b"big", b"a") + b"%PDF-1.7\n" + b"0" * (600 * 1024)
            + f"\r\n--{BOUNDARY}--\r\n".encode())
    head = (f"POST /v1/documents HTTP/1.1\r\nHost: pagemill\r\nAuthorization: Bearer {key}\r\n"
            f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\nContent-Length: {len(body)}\r\n\r\n")
    with gateway.client() as client:  # the tenant's one upload this minute (not a PDF: rejected, but counted)
        client.headers["Authorization"] = f"Bearer {key}"
        assert client.post("/v1/documents", files={"file": ("a.pdf", b"%PDF-1.7\n")}).status_code != 429
    for _ in range(5):
        with socket.create_connection(("127.0.0.1", gateway.port), timeout=10) as sock:
            with contextlib.suppress(OSError):  # a server that closed already refuses the rest of the body
                sock.sendall(head.encode() + body)  # as a client sends it: the gateway answers from the headers
            answer = b""
            while part := sock.recv(65536):  # ConnectionResetError here: the answer was lost in a reset
                answer += part
        assert answer.startswith(b"HTTP/1.1 429") and b'"rate_limited"' in answer, answer[:300]


def test_an_idle_connection_outlives_the_clients_own_keep_alive(gateway: Platform) -> None:
    """httpx drops an idle connection after 5 s and Node after 4 s; uvicorn's default closed it after 5 s, so a
    client could send a request on a connection the gateway was closing (`fetch failed`, a reset POST). The
    gateway now keeps it `limits.keep_alive_s` (75 s): a request after 6 s idle goes over the same socket."""
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=10) as sock:
        request = b"GET /healthz HTTP/1.1\r\nHost: pagemill\r\n\r\n"
        for pause in (0.0, 6.0):
            time.sleep(pause)
            sock.sendall(request)
            answer = b""
            while b"\r\n\r\n" not in answer or not answer.endswith(b"}"):  # the whole answer, head and body
                part = sock.recv(65536)
                assert part, (pause, "the gateway closed the connection", answer)
                answer += part
            assert answer.startswith(b"HTTP/1.1 200"), (pause, answer[:200])


class PeakRss:
    """The highest resident memory of one process, sampled every 20 ms."""

    def __init__(self, pid: int) -> None:
        self.process, self.peak, self._stop = psutil.Process(pid), 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(psutil.Error):
                self.peak = max(self.peak, self.process.memory_info().rss)
            time.sleep(0.02)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


@pytest.mark.parametrize("store", ["local", "s3"])
def test_a_200_mib_upload_does_not_sit_in_the_gateway_memory(platform_factory: PlatformFactory, sqlite_url: str,
                                                            corpus: Path, tmp_path: Path,
                                                            request: pytest.FixtureRequest, store: str) -> None:
    s3 = request.getfixturevalue("s3_endpoint") if store == "s3" else None
    platform = platform_factory(sqlite_url, engine="fake", s3_endpoint=s3, extra_env={
        "PAGEMILL_LIMITS__MAX_FILE_BYTES": str(256 * MIB)}).start(worker=False)
    source = tmp_path / "big.pdf"
    write_padded_pdf(source, 200 * MIB)
    platform.upload(corpus / ONE_PAGE)  # warm up: imports, pools and first allocations are not the upload's

    def body() -> Iterator[bytes]:  # chunked, as a client streaming from a pipe sends it
        yield part_head()
        with source.open("rb") as handle:
            while block := handle.read(MIB):
                yield block
        yield f"\r\n--{BOUNDARY}--\r\n".encode()

    gateway = psutil.Process(platform.processes["gateway"].pid)
    baseline = gateway.memory_info().rss
    rss = PeakRss(gateway.pid)
    with platform.client(timeout=300) as client:
        response = client.post("/v1/documents", content=body(),
                               headers={"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"})
    peak = rss.stop()
    assert response.status_code == 202, response.text
    assert response.json()["pages_total"] == 1
    grew = (peak - baseline) / MIB
    print(f"\n{store}: {source.stat().st_size / MIB:.0f} MiB upload, gateway RSS {baseline / MIB:.0f} MiB → "
          f"peak {peak / MIB:.0f} MiB (+{grew:.1f} MiB)")
    assert grew < 50, f"the gateway's RSS grew by {grew:.1f} MiB during a 200 MiB upload"
