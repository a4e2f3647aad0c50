"""The arithmetic of `make bench-gpu-path`: vLLM's `/metrics` text read into samples, a run's figures from them,
and the table. No I/O here, so the maths is tested on its own (tests/unit/test_gpu_path_figures.py).

A run is one pass of the same pages, either straight at the vLLM server (`direct`) or through pagemill
(`pagemill`). Its figures come from vLLM's own counters read just before and just after it, and from the
samples a poller took of vLLM's gauges while it ran: a sample with no request running inside the run's window
is a moment the server sat idle while pages were still to be done.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

RUNNING = "vllm:num_requests_running"
WAITING = "vllm:num_requests_waiting"
GENERATED = "vllm:generation_tokens_total"
PROMPT = "vllm:prompt_tokens_total"
FINISHED = "vllm:request_success_total"

_LINE = re.compile(r"^(vllm:[a-zA-Z0-9_:]+)(?:\{[^}]*\})?\s+([0-9.eE+-]+|NaN|[+-]Inf)(?:\s+\d+)?$")


def parse_metrics(text: str) -> dict[str, float]:
    """vLLM's Prometheus text as one value per `vllm:` series name, summed over its labels (a counter such as
    `request_success_total` has one series per finish reason; the gauges one per model)."""
    totals: dict[str, float] = {}
    for line in text.splitlines():
        match = _LINE.match(line.strip())
        if match:
            value = float(match.group(2))
            if not math.isnan(value):  # NaN: a series with nothing observed yet adds nothing
                totals[match.group(1)] = totals.get(match.group(1), 0.0) + value
    return totals


@dataclass(frozen=True, slots=True)
class Sample:
    """vLLM's gauges at one moment (seconds on the bench's monotonic clock)."""

    at: float
    running: float
    waiting: float

    @classmethod
    def of(cls, at: float, totals: dict[str, float]) -> Sample:
        return cls(at=at, running=totals.get(RUNNING, 0.0), waiting=totals.get(WAITING, 0.0))


@dataclass(frozen=True, slots=True)
class RunFigures:
    """One run: `pages` pages from `started` to `ended`, what vLLM counted meanwhile, how busy it was."""

    way: str  # "direct", "pagemill", or a pagemill way named by the setting it runs with
    pages: int
    seconds: float
    requests: float
    prompt_tokens: float
    generated_tokens: float
    samples: int
    idle_samples: int  # samples with no request running (and none waiting) inside the window
    mean_running: float
    mean_waiting: float
    # Seconds from the start to the first sample with a request at the server, and from the last such sample to
    # the end: a run's start-up (uploads, splitting, the first page prepared) and its tail (results assembled).
    to_first_s: float = 0.0
    after_last_s: float = 0.0

    @property
    def pages_per_s(self) -> float:
        return self.pages / self.seconds if self.seconds > 0 else 0.0

    @property
    def tokens_per_s(self) -> float:
        return self.generated_tokens / self.seconds if self.seconds > 0 else 0.0

    @property
    def idle_share(self) -> float:
        """Share of the samples in which the server had nothing to run while the run's pages were not done."""
        return self.idle_samples / self.samples if self.samples else 0.0


def run_figures(way: str, pages: int, started: float, ended: float, before: dict[str, float],
                after: dict[str, float], samples: Iterable[Sample]) -> RunFigures:
    """A run's figures: counters as differences of the readings before and after it, gauges from the samples
    taken between `started` and `ended` (those outside the window belong to no run)."""
    if ended < started:
        raise ValueError("a run cannot end before it started")
    inside = [s for s in samples if started <= s.at <= ended]
    idle = sum(1 for s in inside if s.running == 0 and s.waiting == 0)
    busy = [s.at for s in inside if s.running or s.waiting]
    count = len(inside)
    return RunFigures(
        way=way, pages=pages, seconds=ended - started,
        requests=after.get(FINISHED, 0.0) - before.get(FINISHED, 0.0),
        prompt_tokens=after.get(PROMPT, 0.0) - before.get(PROMPT, 0.0),
        generated_tokens=after.get(GENERATED, 0.0) - before.get(GENERATED, 0.0),
        samples=count, idle_samples=idle,
        mean_running=sum(s.running for s in inside) / count if count else 0.0,
        mean_waiting=sum(s.waiting for s in inside) / count if count else 0.0,
        to_first_s=busy[0] - started if busy else ended - started,
        after_last_s=ended - busy[-1] if busy else 0.0,
    )


@dataclass(frozen=True, slots=True)
class Totals:
    """Every run of one way taken together: pages and tokens over the summed seconds (not a mean of rates,
    which would weigh a short run like a long one)."""

    way: str
    runs: int
    pages: int
    seconds: float
    generated_tokens: float
    requests: float
    samples: int
    idle_samples: int

    @property
    def pages_per_s(self) -> float:
        return self.pages / self.seconds if self.seconds > 0 else 0.0

    @property
    def tokens_per_s(self) -> float:
        return self.generated_tokens / self.seconds if self.seconds > 0 else 0.0

    @property
    def idle_share(self) -> float:
        return self.idle_samples / self.samples if self.samples else 0.0


def totals(way: str, runs: Sequence[RunFigures]) -> Totals:
    mine = [r for r in runs if r.way == way]
    return Totals(way=way, runs=len(mine), pages=sum(r.pages for r in mine), seconds=sum(r.seconds for r in mine),
                  generated_tokens=sum(r.generated_tokens for r in mine), requests=sum(r.requests for r in mine),
                  samples=sum(r.samples for r in mine), idle_samples=sum(r.idle_samples for r in mine))


def ratio(through: float, direct: float) -> float:
    """pagemill's figure over the direct client's (0 when the direct run measured nothing)."""
    return through / direct if direct > 0 else 0.0


def table(runs: Sequence[RunFigures]) -> list[str]:
    """The Markdown rows: each run in the order it ran, then each way's totals and each pagemill way's ratio to
    the direct client (several pagemill ways: one per setting compared in the same run)."""
    lines = ["| run | way | pages | s | pages/s | generated tokens | tokens/s | requests | mean running "
             "| idle samples | s to the first request | s after the last |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for number, run in enumerate(runs, 1):
        lines.append(f"| {number} | {run.way} | {run.pages} | {run.seconds:.2f} | {run.pages_per_s:.2f} "
                     f"| {run.generated_tokens:.0f} | {run.tokens_per_s:.1f} | {run.requests:.0f} "
                     f"| {run.mean_running:.2f} | {run.idle_samples}/{run.samples} ({100 * run.idle_share:.0f} %) "
                     f"| {run.to_first_s:.2f} | {run.after_last_s:.2f} |")
    ways = list(dict.fromkeys(["direct", *(run.way for run in runs)]))
    for total in (totals(way, runs) for way in ways):
        lines.append(f"| all {total.runs} | **{total.way}** | {total.pages} | {total.seconds:.2f} "
                     f"| **{total.pages_per_s:.2f}** | {total.generated_tokens:.0f} | **{total.tokens_per_s:.1f}** "
                     f"| {total.requests:.0f} | | {total.idle_samples}/{total.samples} "
                     f"({100 * total.idle_share:.0f} %) | | |")
    direct = totals("direct", runs)
    for through in (totals(way, runs) for way in ways[1:]):
        lines.append(f"| | **{through.way} / direct** | | | **{ratio(through.pages_per_s, direct.pages_per_s):.2f}** "
                     f"| | **{ratio(through.tokens_per_s, direct.tokens_per_s):.2f}** | | | | | |")
    return lines
