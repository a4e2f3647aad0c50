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
from tests.openai_answers import completion


class _Model(http.server.BaseHTTPRequestHandler):
    answer: ClassVar[str] = ""
    requests: ClassVar[list[dict[str, Any]]] = []
    doubtful: ClassVar[frozenset[str]] = frozenset()  # words the model writes with a low probability

    def do_POST(self) -> None:  # http.server's naming
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        type(self).requests.append(request)
        doubtful = type(self).doubtful
        body = json.dumps(completion(type(self).answer, logprobs=bool(request.get("logprobs")),
                                     logprob_of=lambda token: -2.0 if token.strip() in doubtful else -0.01)).encode()
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


def test_each_block_is_as_sure_as_the_tokens_that_wrote_it_and_agrees_with_the_page(
        model: type[_Model], corpus: Path) -> None:
    read_right = ("The concept of the word processor predates modern computers and has evolved through several "
                  "technological milestones.")
    made_up = "The first word processor was invented on the Moon in 1802."
    model.answer = f"## The Evolution of the Word Processor\n\n{read_right}\n\n{made_up}\n"
    model.doubtful = frozenset({"Moon", "1802."})
    settings = settings_for("generic", model.url)  # type: ignore[attr-defined]
    outcome = run_page(load_engine("vllm", settings), a_page_with_text(corpus), settings)
    assert model.requests[0]["logprobs"] is True
    confidence = {e.text: e.confidence for e in outcome.output.elements}
    assert all(c is not None and 0 < c <= 1 for c in confidence.values())
    assert confidence[read_right] > 0.95  # sure tokens, and the page's text layer says the same
    assert confidence[made_up] < 0.5 * confidence[read_right]  # type: ignore[operator]
    page = outcome.output.confidence
    assert page is not None and confidence[made_up] < page < confidence[read_right]  # type: ignore[operator]
    assert outcome.output.signals["tokens_scored"] > 0 and 0 < outcome.output.signals["agreement"] < 1


def test_a_server_that_sends_no_logprobs_leaves_agreement_alone(model: type[_Model], corpus: Path) -> None:
    model.answer = "## The Evolution of the Word Processor\n\nZebras juggle xylophones beside marmalade volcanoes.\n"
    settings = Settings(engine={"kind": "vllm", "preset": "generic", "vllm_url": model.url,  # type: ignore[attr-defined]
                                "request_timeout_s": 10, "request_extra": {"logprobs": False}})
    outcome = run_page(load_engine("vllm", settings), a_page_with_text(corpus), settings)
    assert model.requests[0]["logprobs"] is False
    heading, made_up = outcome.output.elements
    assert heading.confidence == 1.0 and made_up.confidence is not None and made_up.confidence < 0.5
    assert "tokens_scored" not in outcome.output.signals
