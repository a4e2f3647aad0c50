"""One contract, every engine: what the pipeline may rely on whichever engine a page goes to.

`fake` and `cpu` run in `make test`; `vllm` runs against a real vLLM server in `make test-vllm`.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from services.core.errors import EngineUnavailable, PagemillError
from services.core.pdf import PDF, PNG, split_pdf
from services.core.settings import Settings
from services.worker.engines import Engine, PageInput, load_engine
from services.worker.engines.vllm.engine import EngineRejected, VllmEngine
from services.worker.pipeline.inputs import prepare_input
from tests.servers import free_port
from tests.vllm_server import VllmServer

ENGINES = ["fake", "cpu", pytest.param("vllm", marks=pytest.mark.vllm)]


@pytest.fixture(params=ENGINES)
def engine_and_settings(request: pytest.FixtureRequest) -> tuple[Engine, Settings]:
    if request.param == "vllm":
        server: VllmServer = request.getfixturevalue("vllm_server")
        return load_engine("vllm", server.settings), server.settings
    settings = Settings()
    return load_engine(request.param, settings), settings


def corpus_pages(corpus: Path) -> list[PageInput]:
    digital = next(split_pdf((corpus / "dev/docling_multi_page/multi_page.pdf").read_bytes(), [1]))
    scan = (corpus / "dev/tesseract_phototest/phototest.png").read_bytes()
    return [PageInput("contract", 0, PDF, digital), PageInput("contract", 1, PNG, scan)]


def test_a_page_in_gives_one_page_output_out(engine_and_settings: tuple[Engine, Settings], corpus: Path) -> None:
    engine, settings = engine_and_settings
    assert isinstance(engine.needs_text_layer, bool) and isinstance(engine.needs_image, bool)
    for page in corpus_pages(corpus):
        prepared = prepare_input(engine, page, settings)
        assert (prepared.image is not None) == engine.needs_image
        output = engine.parse(prepared, temperature=0.1)
        assert output.engine == engine.name and output.model
        assert isinstance(output.markdown, str)
        assert output.finish_reason in ("stop", "length")
        assert output.prompt_tokens >= 0 and output.completion_tokens >= 0
        if engine.generative:
            # A generative engine reports what the request cost, as its server counted it.
            assert output.prompt_tokens > 0 and output.completion_tokens > 0


def test_a_healthy_engine_says_so(engine_and_settings: tuple[Engine, Settings]) -> None:
    engine, _ = engine_and_settings
    assert engine.check_health() is None


# The vllm engine's failure contract, on real sockets (no vLLM needed) ---------------------------------------------


class _Answer(http.server.BaseHTTPRequestHandler):
    status = 503

    def do_GET(self) -> None:  # http.server's naming
        self._reply()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self._reply()

    def _reply(self) -> None:
        body = b'{"error": {"message": "busy"}}'
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        return None


@pytest.fixture
def answering() -> Iterator[type[_Answer]]:
    """An HTTP server on loopback that answers every request with `handler.status` (a proxy or a busy vLLM)."""
    handler = type("Handler", (_Answer,), {})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    handler.url = f"http://127.0.0.1:{server.server_address[1]}"  # type: ignore[attr-defined]
    # polled every 50 ms instead of 500: shutdown() waits for the next poll
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield handler
    server.shutdown()


def vllm_engine(url: str) -> VllmEngine:
    return VllmEngine(Settings(engine={"kind": "vllm", "vllm_url": url, "request_timeout_s": 5}))


def a_page() -> PageInput:
    return PageInput("contract", 0, PNG, b"", image=b"\x89PNG\r\n\x1a\n", anchor="text")


def test_vllm_down_is_retryable_engine_unavailable() -> None:
    engine = vllm_engine(f"http://127.0.0.1:{free_port()}")  # nothing listens there
    with pytest.raises(EngineUnavailable) as raised:
        engine.parse(a_page())
    assert raised.value.retryable
    with pytest.raises(EngineUnavailable):
        engine.check_health()
    assert engine.in_flight == 0


@pytest.mark.parametrize("status", [503, 429, 502])
def test_vllm_busy_is_retryable_engine_unavailable(answering: type[_Answer], status: int) -> None:
    answering.status = status
    engine = vllm_engine(answering.url)  # type: ignore[attr-defined]
    with pytest.raises(EngineUnavailable, match=str(status)):
        engine.parse(a_page())
    with pytest.raises(EngineUnavailable):
        engine.check_health()


def test_a_refused_request_is_a_page_error_not_an_outage(answering: type[_Answer]) -> None:
    answering.status = 400
    with pytest.raises(EngineRejected) as raised:
        vllm_engine(answering.url).parse(a_page())  # type: ignore[attr-defined]
    assert isinstance(raised.value, PagemillError) and not raised.value.retryable
