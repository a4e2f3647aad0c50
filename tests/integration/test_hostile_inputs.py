"""One table of hostile inputs — every file in `corpus/bad`, bombs made here, malformed forms, a slow-loris
upload — each with what a client gets: an HTTP status and error code at upload, or the status the document
ends with and the error code its failed page carries. Never a 5xx, and the worker outlives them all."""

from __future__ import annotations

import contextlib
import json
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.harness import CORPUS, Platform
from tests.integration.test_bad_inputs import PARSED, REJECTED, PeakRss
from tests.pdfs import flate_bomb_pdf, image_bomb_pdf, jpeg_claiming, png_claiming

pytestmark = pytest.mark.slow

ONE_PAGE = CORPUS / "dev" / "pypdf_crazyones" / "crazyones.pdf"
if not (CORPUS / "bad").is_dir() or not ONE_PAGE.is_file():
    pytest.skip(f"needs the shared corpus, which is not at {CORPUS} (clone it to ../shared/corpus or set "
                "PAGEMILL_CORPUS)", allow_module_level=True)
IDLE_TIMEOUT_S = 2
MAX_FILE_BYTES = 30 * 1024 * 1024
# The worker's peak over the whole table (two pool children): a 1 GiB zip bomb inflated whole would pass it.
MAX_WORKER_RSS = 1536 * 1024 * 1024


@dataclass(frozen=True)
class Rejected:
    status: int
    code: str


@dataclass(frozen=True)
class Ends:
    status: str  # the document's final status
    pages: int
    page_error: str | None = None  # the code on its failed page


Send = Callable[[Platform], httpx.Response]


def upload(content: bytes, name: str = "x.pdf", **fields: str) -> Send:
    def send(platform: Platform) -> httpx.Response:
        with platform.client() as client:
            return client.post("/v1/documents", files={"file": (name, content)}, data=fields)
    return send


def raw(body: bytes, content_type: str, headers: dict[str, str] | None = None) -> Send:
    def send(platform: Platform) -> httpx.Response:
        with platform.client() as client:
            return client.post("/v1/documents", content=body, headers={"Content-Type": content_type,
                                                                       **(headers or {})})
    return send


def form(*parts: tuple[str, str | None, bytes], closed: bool = True) -> Send:
    """A multipart body written by hand (what an ordinary client never sends)."""
    boundary = "hostileboundary"
    body = b""
    for name, filename, data in parts:
        disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
        body += f"--{boundary}\r\nContent-Disposition: {disposition}\r\n\r\n".encode() + data + b"\r\n"
    if closed:
        body += f"--{boundary}--\r\n".encode()
    return raw(body, f"multipart/form-data; boundary={boundary}")


def slow_loris(platform: Platform) -> httpx.Response:
    """A chunked upload that sends a few bytes now and then, bounded at 30 s on loopback."""
    host, port = platform.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall((f"POST /v1/documents HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {platform.api_key}\r\n"
                      "Transfer-Encoding: chunked\r\nContent-Type: multipart/form-data; boundary=b\r\n\r\n").encode())
        head = b'--b\r\nContent-Disposition: form-data; name="file"; filename="s.pdf"\r\n\r\n%PDF-1.7\n'
        sock.sendall(f"{len(head):x}\r\n".encode() + head + b"\r\n")
        sock.setblocking(False)
        answer, deadline = b"", time.monotonic() + 30
        while time.monotonic() < deadline and b"\r\n\r\n" not in answer:
            try:
                answer += sock.recv(65536)
                continue
            except BlockingIOError:
                pass
            with contextlib.suppress(OSError):
                sock.sendall(b"4\r\n0000\r\n")  # 4 bytes every 0.2 s: 20 bytes/s
            time.sleep(0.2)
        sock.setblocking(True)
        sock.settimeout(5)
        while not answer.rstrip().endswith(b"}"):
            data = sock.recv(65536)
            if not data:
                break
            answer += data
    head_bytes, _, body = answer.partition(b"\r\n\r\n")
    return httpx.Response(int(head_bytes.split()[1]), content=body)


def corpus_case(case: str) -> Send:
    folder = CORPUS / "bad" / case
    files = [f for f in folder.iterdir() if f.suffix == ".pdf"] or \
        [f for f in folder.iterdir() if f.is_file() and f.name != "README.md"]
    # the 352-page document is parsed in part: its pages are ordinary, its length is what is tested elsewhere
    fields = {"pages": "1-3"} if case == "longdoc_pdfjs_freeculture" else {}
    return upload(files[0].read_bytes(), files[0].name, **fields)


def corpus_expectation(case: str) -> Rejected | Ends:
    if case in REJECTED:
        return Rejected(*REJECTED[case])
    status, pages = PARSED[case]
    if case == "longdoc_pdfjs_freeculture":
        pages = 3
    return Ends(status, pages, "page_too_large" if status == "failed" else None)


def cases() -> list[tuple[str, Send, Rejected | Ends]]:
    good = ONE_PAGE.read_bytes()
    corpus = sorted(p.name for p in (CORPUS / "bad").iterdir() if p.is_dir())
    return [
        *[(f"corpus:{case}", corpus_case(case), corpus_expectation(case)) for case in corpus],
        # bombs
        ("zip bomb: FlateDecode content stream inflating to 1 GiB", upload(flate_bomb_pdf(1024**3)),
         Ends("failed", 1, "page_too_large")),
        ("image bomb: PDF drawing a 100000 x 100000 px image", upload(image_bomb_pdf(100_000, 100_000)),
         Ends("failed", 1, "page_too_large")),
        ("image bomb: PNG declaring 100000 x 100000 px", upload(png_claiming(100_000, 100_000), "x.png"),
         Rejected(422, "corrupt_document")),
        ("image bomb: JPEG declaring 65000 x 65000 px", upload(jpeg_claiming(65_000, 65_000), "x.jpg"),
         Rejected(422, "corrupt_document")),
        ("over the size limit", upload(b"%PDF-1.7\n" + b"0" * (MAX_FILE_BYTES + 1)), Rejected(413, "file_too_large")),
        ("slow-loris upload", slow_loris, Rejected(408, "request_timeout")),
        # fields
        ("pages: 5000 digits", upload(good, pages="9" * 5000), Rejected(422, "validation_error")),
        ("pages: a range of 5000 digits", upload(good, pages="1-" + "9" * 5000), Rejected(422, "validation_error")),
        ("metadata: nested 100000 deep", upload(good, metadata="[" * 100_000 + "]" * 100_000),
         Rejected(422, "validation_error")),
        ("metadata: nested 40 deep", upload(good, metadata='{"a":' + "[" * 40 + "]" * 40 + "}"),
         Rejected(422, "validation_error")),
        ("metadata: NaN", upload(good, metadata='{"a": NaN}'), Rejected(422, "validation_error")),
        ("metadata: Infinity", upload(good, metadata='{"a": -Infinity}'), Rejected(422, "validation_error")),
        ("metadata: 1e999", upload(good, metadata='{"a": 1e999}'), Rejected(422, "validation_error")),
        ("metadata: an integer of 5000 digits", upload(good, metadata='{"a": ' + "9" * 5000 + "}"),
         Rejected(422, "validation_error")),
        ("webhook_url: not http(s)", upload(good, webhook_url="file:///etc/passwd"), Rejected(422, "validation_error")),
        ("cache: neither true nor false", upload(good, cache="maybe"), Rejected(422, "validation_error")),
        # the form itself
        ("no file part", form(("pages", None, b"1")), Rejected(422, "validation_error")),
        ("two file parts", form(("file", "a.pdf", good), ("file", "b.pdf", good)), Rejected(422, "validation_error")),
        ("a field that is not UTF-8", form(("file", "a.pdf", good), ("pages", None, b"\xff\xfe")),
         Rejected(422, "validation_error")),
        ("a field over 64 KiB", form(("file", "a.pdf", good), ("mode", None, b"x" * 70_000)),
         Rejected(422, "validation_error")),
        ("a body cut before its closing boundary", form(("file", "a.pdf", good), closed=False),
         Rejected(422, "validation_error")),
        ("JSON instead of a form", raw(json.dumps({"file": "x"}).encode(), "application/json"),
         Rejected(422, "validation_error")),
        ("a boundary that never appears", raw(b"garbage" * 1000, "multipart/form-data; boundary=zzz"),
         Rejected(422, "validation_error")),
        ("Idempotency-Key of 300 characters",
         raw(b"", "multipart/form-data; boundary=b", {"Idempotency-Key": "k" * 300}),
         Rejected(422, "validation_error")),
    ]


CASES = cases()


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory, redis_server: str) -> Any:
    from services.core.db.session import migrate

    workdir = tmp_path_factory.mktemp("hostile")
    database = f"sqlite:///{workdir / 'pagemill.db'}"
    migrate(database)
    platform = Platform(workdir=workdir / "platform", database_url=database, redis_base_url=redis_server,
                        extra_env={"PAGEMILL_LIMITS__MAX_FILE_BYTES": str(MAX_FILE_BYTES),
                                   "PAGEMILL_LIMITS__UPLOAD_IDLE_TIMEOUT_S": str(IDLE_TIMEOUT_S),
                                   "PAGEMILL_LIMITS__UPLOAD_MIN_BYTES_PER_S": "1000",
                                   "PAGEMILL_LIMITS__REQUESTS_PER_MINUTE": "100000"})
    platform.start(concurrency=2)
    platform.peak_rss = PeakRss(platform.processes["worker"].pid)  # type: ignore[attr-defined]
    yield platform
    platform.stop()


def test_the_table_covers_every_bad_file_of_the_corpus() -> None:
    listed = {name.removeprefix("corpus:") for name, _, _ in CASES if name.startswith("corpus:")}
    assert listed == {p.name for p in (CORPUS / "bad").iterdir() if p.is_dir()}


@pytest.mark.parametrize(("name", "send", "expected"), CASES, ids=[name for name, _, _ in CASES])
def test_hostile_input(hostile: Platform, name: str, send: Send, expected: Rejected | Ends) -> None:
    response = send(hostile)
    assert response.status_code < 500, (name, response.text[:500])
    if isinstance(expected, Rejected):
        assert response.status_code == expected.status, (name, response.text[:500])
        assert response.json()["error"]["code"] == expected.code, (name, response.text[:500])
        assert response.json()["error"]["message"]
    else:
        assert response.status_code == 202, (name, response.text[:500])
        assert response.json()["pages_total"] == expected.pages, name
        state = hostile.wait_done(response.json()["id"], timeout=300)
        assert state["status"] == expected.status, (name, state)
        if expected.page_error:
            with hostile.client() as client:
                page = client.get(f"/v1/documents/{state['id']}/pages/1").json()
            assert page["error"]["code"] == expected.page_error, (name, page)
    assert hostile.processes["worker"].poll() is None, "the worker must survive every input"
    assert hostile.processes["gateway"].poll() is None, "the gateway must survive every input"


def test_no_input_made_an_unexpected_error_or_ate_the_memory(hostile: Platform) -> None:
    peak = hostile.peak_rss.stop()  # type: ignore[attr-defined]
    print(f"\nworker peak RSS over the table: {peak / 2**20:.0f} MiB")
    assert peak < MAX_WORKER_RSS, f"worker peak RSS {peak / 2**20:.0f} MiB"
    for process in ("gateway", "worker"):
        log = hostile.log(process)
        assert "request.error" not in log and "Traceback" not in log, log[-3000:]
