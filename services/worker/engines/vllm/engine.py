"""The vllm engine: one page to a vLLM server's OpenAI-compatible `/v1/chat/completions`, over HTTP.

vLLM runs as its own process (a sidecar on Kubernetes), so this module needs httpx and nothing of CUDA.
It makes one attempt and says how it went; retries, the temperature ladder, the checks on the answer and the
fallback live in `worker/pipeline.py`. A process never has more than `engine.max_in_flight` requests open: that
many sender threads send them (senders.py).
"""

from __future__ import annotations

import base64
import threading
import time
from typing import Any

from services.core import openai_api
from services.core.errors import DETAIL_CHARS, EngineUnavailable, PageError, clip
from services.core.logging import get_logger
from services.core.metrics import ENGINE_IN_FLIGHT, ENGINE_REQUESTS, ENGINE_TOKENS
from services.core.settings import Settings
from services.worker.engines.base import AnswerTokens, GroupAnswer, PageInput, PageOutput
from services.worker.engines.vllm.layout_answer import layout_elements, page_size
from services.worker.engines.vllm.presets import Preset, get_preset
from services.worker.engines.vllm.senders import Senders, json_body
from services.worker.engines.vllm.token_confidence import read_tokens

log = get_logger(__name__)


class EngineRejected(PageError):
    """The vLLM server refused this page's request (too long for the context, an image it cannot read…)."""

    code = "engine_rejected"


class VllmEngine:
    name = "vllm"
    needs_text_layer = True
    needs_image = True
    needs_anchor = True  # the pipeline fills PageInput.anchor (text layer or the cpu engine's OCR)
    generative = True  # its answers are checked, retried up the temperature ladder, and may fall back

    def __init__(self, settings: Settings) -> None:
        engine = settings.engine
        self.settings = settings
        self.preset: Preset = get_preset(engine.preset)
        self.model = engine.model or self.preset.model
        self.max_tokens = engine.max_tokens or self.preset.max_tokens
        self.render_longest_side = engine.render_longest_side or self.preset.render_longest_side
        self.max_in_flight = engine.max_in_flight
        # never more than max_in_flight open requests from this process: that many threads send them
        self._senders: Senders[dict[str, Any]] = Senders(self._send, engine.max_in_flight)
        self._open = 0
        self._open_lock = threading.Lock()
        self.peak_in_flight = 0
        self._client = openai_api.open_client(engine.vllm_url, api_key=engine.api_key,
                                              timeout_s=engine.request_timeout_s,
                                              max_connections=engine.max_in_flight)

    # The request ------------------------------------------------------------------------------------------

    def request_body(self, page: PageInput, *, temperature: float) -> dict[str, Any]:
        return self._body([page], self.preset.user_text(page.anchor), temperature=temperature)

    def group_body(self, pages: list[PageInput], *, temperature: float) -> dict[str, Any]:
        """One request for consecutive pages: their images in order, the multi-page prompt (no anchor), the token
        budget of that many pages."""
        body = self._body(pages, self.preset.pages_text(len(pages)), temperature=temperature)
        body["max_tokens"] = self.max_tokens * len(pages)
        return body

    def _body(self, pages: list[PageInput], prompt: str, *, temperature: float) -> dict[str, Any]:
        images: list[dict[str, Any]] = []
        for page in pages:
            if page.image is None:
                raise ValueError("the vllm engine needs the rendered page (PageInput.image)")
            images.append({"type": "image_url",
                           "image_url": {"url": "data:image/png;base64," + base64.b64encode(page.image).decode()}})
        # An empty prompt sends the images alone (LightOnOCR reads a page with no instruction).
        text_parts = [{"type": "text", "text": prompt}] if prompt else []
        content = [*images, *text_parts] if self.preset.image_first else [*text_parts, *images]
        return {
            **self.preset.sampling,
            # Each token's log-probability: what the blocks' confidence is made of (token_confidence.py).
            "logprobs": True,
            **self.settings.engine.request_extra,
            "model": self.model,
            "messages": [{"role": "user", "content": content}],
            "max_tokens": self.max_tokens,
            "temperature": temperature,
        }

    def parse(self, page: PageInput, *, temperature: float = 0.0) -> PageOutput:
        started = time.perf_counter()
        answer = self._complete(self.request_body(page, temperature=temperature))
        return self._output(answer, page, int((time.perf_counter() - started) * 1000))

    def parse_group(self, pages: list[PageInput], *, temperature: float = 0.0) -> GroupAnswer:
        """One attempt at several pages in one request: the raw answer, split by the caller."""
        started = time.perf_counter()
        answer = self._complete(self.group_body(pages, temperature=temperature))
        choice = (answer.get("choices") or [{}])[0]
        usage = answer.get("usage") or {}
        prompt_tokens = int(usage.get("prompt_tokens") or 0)
        completion_tokens = int(usage.get("completion_tokens") or 0)
        finish_reason = choice.get("finish_reason") or "stop"
        self._count_tokens(prompt_tokens, completion_tokens, finish_reason)
        text = (choice.get("message") or {}).get("content") or ""
        return GroupAnswer(text=text, finish_reason=finish_reason,
                           model=str(answer.get("model") or self.model), prompt_tokens=prompt_tokens,
                           completion_tokens=completion_tokens, ms=int((time.perf_counter() - started) * 1000),
                           tokens=read_tokens(choice, text))

    def page_output(self, text: str, page: PageInput, *, finish_reason: str, model: str, prompt_tokens: int,
                    completion_tokens: int, ms: int, tokens: AnswerTokens | None = None) -> PageOutput:
        """One page's answer (alone, or its part of a group's) as the page's output; `tokens`: those that wrote
        it, with their log-probabilities (the pipeline turns them into the blocks' confidence)."""
        parsed = self.preset.parse(text)
        width, height = _png_size(page.image or b"")
        boxed: dict[str, Any] = {}
        if parsed.layout is not None:  # the model gave boxes itself: they are the elements' boxes
            size = page_size(page.data, page.media_type)
            boxed = {"width": size[0], "height": size[1], "elements": layout_elements(
                parsed.layout, image_size=(width, height), rotation=page.rotation, page_size=size,
                page=page.index + 1)}
        return PageOutput(
            markdown=parsed.markdown, engine=self.name, model=model,
            finish_reason=finish_reason, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
            rotation=page.rotation % 360, width_px=width, height_px=height,
            details={"preset": self.preset.name, "request_ms": ms, "answer_chars": len(text),
                     "rotation_valid": parsed.rotation_valid, "rotation_correction": parsed.rotation_correction,
                     **({"empty": True} if parsed.empty else {}),
                     **({"page_meta": parsed.meta} if parsed.meta else {})},
            tokens=tokens,
            **boxed,
        )

    def _complete(self, body: dict[str, Any]) -> dict[str, Any]:
        # Encoded before the wait, so that a request that ends is followed at once by the next (senders.py).
        return self._senders.call(json_body(body))

    def _send(self, content: bytes) -> dict[str, Any]:
        """One request, on a sender's thread."""
        self._enter()
        try:
            return openai_api.request_json(self._client, "POST", "/v1/chat/completions", content=content,
                                           headers={"Content-Type": "application/json"})
        except EngineUnavailable:
            self._count("unavailable")
            raise
        except openai_api.ModelRefused as exc:
            self._count("rejected")
            raise EngineRejected(f"vLLM answered {exc.status_code}: {clip(exc.text, DETAIL_CHARS)}") from exc
        except openai_api.ModelAnswerNotJson as exc:
            self._count("rejected")
            raise EngineRejected(f"vLLM answered {exc}") from exc
        finally:
            self._leave()

    def _output(self, answer: dict[str, Any], page: PageInput, ms: int) -> PageOutput:
        choice = (answer.get("choices") or [{}])[0]
        text = (choice.get("message") or {}).get("content") or ""
        finish_reason = choice.get("finish_reason") or "stop"
        usage = answer.get("usage") or {}
        prompt_tokens = int(usage.get("prompt_tokens") or 0)
        completion_tokens = int(usage.get("completion_tokens") or 0)
        self._count_tokens(prompt_tokens, completion_tokens, finish_reason)
        return self.page_output(text, page, finish_reason=finish_reason, model=str(answer.get("model") or self.model),
                                prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, ms=ms,
                                tokens=read_tokens(choice, text))

    def _count_tokens(self, prompt_tokens: int, completion_tokens: int, finish_reason: str) -> None:
        ENGINE_TOKENS.labels(engine=self.name, kind="prompt").inc(prompt_tokens)
        ENGINE_TOKENS.labels(engine=self.name, kind="completion").inc(completion_tokens)
        self._count("length" if finish_reason == "length" else "ok")

    # Health and bookkeeping ---------------------------------------------------------------------------------

    def check_health(self) -> None:
        openai_api.check_health(self._client)

    @property
    def in_flight(self) -> int:
        return self._open

    def _enter(self) -> None:
        with self._open_lock:
            self._open += 1
            self.peak_in_flight = max(self.peak_in_flight, self._open)
        ENGINE_IN_FLIGHT.labels(engine=self.name).inc()

    def _leave(self) -> None:
        with self._open_lock:
            self._open -= 1
        ENGINE_IN_FLIGHT.labels(engine=self.name).dec()

    def _count(self, outcome: str) -> None:
        ENGINE_REQUESTS.labels(engine=self.name, outcome=outcome).inc()

    def close(self) -> None:
        self._senders.close()
        self._client.close()


def _png_size(data: bytes) -> tuple[int, int]:
    """Width and height from a PNG's IHDR, without decoding it."""
    if len(data) >= 24 and data[:8] == b"\x89PNG\r\n\x1a\n":
        return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    return 0, 0
