"""The one OpenAI-compatible client against a real HTTP server on 127.0.0.1: what each kind of answer becomes."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from services.core import openai_api
from services.core.errors import EngineUnavailable

# path → (status, body) the server answers with
ANSWERS: dict[str, tuple[int, bytes]] = {
    "/ok": (200, json.dumps({"choices": [{"message": {"content": "hi"}}]}).encode()),
    "/busy": (503, b"loading the model"),
    "/throttled": (429, b"slow down"),
    "/refused": (400, b"This model's maximum context length is 16384 tokens" + b"x" * 1000),
    "/html": (200, b"<html>a proxy's page</html>"),
    "/list": (200, b"[1, 2]"),
    "/health": (200, b""),
}


class _Handler(BaseHTTPRequestHandler):
    def _answer(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        self.rfile.read(length)
        status, body = ANSWERS.get(self.path, (404, b"no such path"))
        self.send_response(status)
        self.send_header("content-length", str(len(body)))
        self.send_header("x-auth", self.headers.get("authorization") or "")
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    with openai_api.open_client(f"http://127.0.0.1:{server.server_port}/", api_key="k", timeout_s=5.0) as http:
        yield http
    server.shutdown()
    thread.join()


def test_a_json_object_answer_is_returned(client: httpx.Client) -> None:
    assert openai_api.request_json(client, "POST", "/ok", json={})["choices"][0]["message"]["content"] == "hi"
    assert client.get("/ok").headers["x-auth"] == "Bearer k"


@pytest.mark.parametrize("path", ["/busy", "/throttled"])
def test_busy_answers_are_unavailable(client: httpx.Client, path: str) -> None:
    with pytest.raises(EngineUnavailable) as raised:
        openai_api.request_json(client, "POST", path)
    assert raised.value.retryable


def test_an_error_status_is_refused_with_its_status_and_body(client: httpx.Client) -> None:
    with pytest.raises(openai_api.ModelRefused) as raised:
        openai_api.request_json(client, "POST", "/refused")
    assert raised.value.status_code == 400
    assert raised.value.text.startswith("This model's maximum context length")
    assert len(str(raised.value)) < 400


@pytest.mark.parametrize("path", ["/html", "/list"])
def test_a_body_that_is_no_json_object_is_said_so(client: httpx.Client, path: str) -> None:
    with pytest.raises(openai_api.ModelAnswerNotJson):
        openai_api.request_json(client, "GET", path)


def test_a_closed_port_is_unavailable() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with openai_api.open_client(f"http://127.0.0.1:{port}", api_key=None, timeout_s=2.0) as http:
        with pytest.raises(EngineUnavailable, match="unreachable"):
            openai_api.request_json(http, "GET", "/ok")
        with pytest.raises(EngineUnavailable):
            openai_api.check_health(http)


def test_health_answers_200(client: httpx.Client) -> None:
    openai_api.check_health(client)
