"""Each model family's request shape and answer handling, through the real pipeline over real HTTP.

The server is an OpenAI-compatible endpoint on loopback that records the request and answers as the model
would (the real model needs a GPU); `make test-vllm` sends the same shapes to a real vLLM server.
"""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from services.core.pdf import PDF, split_pdf
from services.core.settings import Settings
from services.worker.engines import PageInput, load_engine
from services.worker.pipeline.page import run_page


class _Model(http.server.BaseHTTPRequestHandler):
    answer: ClassVar[str] = ""
    requests: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:  # http.server's naming
        type(self).requests.append(json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0)))))
        body = json.dumps({"model": "m", "choices": [{"message": {"content": type(self).answer},
                                                       "finish_reason": "stop"}],
                           "usage": {"prompt_tokens": 10, "completion_tokens": 2}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        return None


@pytest.fixture
def model() -> Iterator[type[_Model]]:
    handler = type("Handler", (_Model,), {"requests": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    handler.url = f"http://127.0.0.1:{server.server_address[1]}"  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield handler
    server.shutdown()


def a_page_with_text(corpus: Path) -> PageInput:
    pdf = (corpus / "dev" / "docling_multi_page" / "multi_page.pdf").read_bytes()
    return PageInput("family", 0, PDF, next(split_pdf(pdf, [1])))


def settings_for(preset: str, url: str) -> Settings:
    return Settings(engine={"kind": "vllm", "preset": preset, "vllm_url": url, "request_timeout_s": 10,
                            "max_attempts": 3})


def test_deepseek_null_on_a_page_with_text_succeeds_empty_without_retry_or_fallback(
        model: type[_Model], corpus: Path) -> None:
    model.answer = "null"
    settings = settings_for("deepseek_ocr", model.url)  # type: ignore[attr-defined]
    outcome = run_page(load_engine("vllm", settings), a_page_with_text(corpus), settings)
    assert outcome.attempts == 1 and not outcome.is_fallback
    assert outcome.output.markdown == "" and outcome.output.details["empty"] is True
    request = model.requests[0]
    assert request["skip_special_tokens"] is False and request["vllm_xargs"]["ngram_size"] == 30
    texts = [part["text"] for part in request["messages"][0]["content"] if part["type"] == "text"]
    assert texts == ["<|grounding|>Convert the document to markdown."]  # no anchor: plain prompts work best


def test_an_empty_answer_from_a_model_that_does_not_say_null_is_still_retried(
        model: type[_Model], corpus: Path) -> None:
    model.answer = ""
    settings = settings_for("generic", model.url)  # type: ignore[attr-defined]
    outcome = run_page(load_engine("vllm", settings), a_page_with_text(corpus), settings)
    assert outcome.attempts == 3 and outcome.is_fallback and outcome.fallback_reason == "empty"


def test_qwen35_sends_the_prompt_before_the_image_with_thinking_off(model: type[_Model], corpus: Path) -> None:
    model.answer = "# Page\n\nText."
    settings = settings_for("qwen35_vl", model.url)  # type: ignore[attr-defined]
    outcome = run_page(load_engine("vllm", settings), a_page_with_text(corpus), settings)
    assert not outcome.is_fallback
    request = model.requests[0]
    assert [part["type"] for part in request["messages"][0]["content"]] == ["text", "image_url"]
    assert request["chat_template_kwargs"] == {"enable_thinking": False}


def test_hunyuan_renders_at_its_native_size(model: type[_Model], corpus: Path) -> None:
    model.answer = "Text."
    settings = settings_for("hunyuan_ocr", model.url)  # type: ignore[attr-defined]
    outcome = run_page(load_engine("vllm", settings), a_page_with_text(corpus), settings)
    assert max(outcome.output.width_px, outcome.output.height_px) == 2048
    assert model.requests[0]["top_k"] == 1
