"""`make bench-gpu-path`: is pagemill ever what the GPU waits for? One `vllm serve`, the same pages two ways.

One vLLM server (vLLM on CPU, the tiny random-weight Qwen2-VL of `make test-vllm`) is started once. The same
digital pages of the dev corpus are then sent to it, alternately:

- **direct**: an async OpenAI-API client fires exactly the requests pagemill's vllm engine sends (built by the
  engine's own `request_body`, after the pipeline's own anchor and render), `engine.max_in_flight` at a time;
- **pagemill**: `pagemill serve` with engine=vllm, pointed at the same server, gets the same pages uploaded
  (mode `accurate`: every page to vLLM); the clock runs from the first upload to the last `succeeded`.

While each run lasts, vLLM's `/metrics` is sampled every 100 ms (`num_requests_running`, `num_requests_waiting`)
and its counters are read before and after (generated tokens, finished requests). A warm-up of each way comes
first (vLLM's prefix and image caches, the worker's engines loaded), then the ways alternate to cancel the
noise of a shared machine. The table goes to docs/benchmarks.md; the figures' maths is bench/gpu_path_figures.py.

`--server standin` (`make bench-gpu-path-standin`) puts bench/gpu_standin.py in vLLM's place: the same HTTP
contract and `/metrics`, answers timed like a GPU engine (continuous batching, a step that does not grow with the
batch) and no CPU spent on the model, so the ratio is the one a GPU host would see; no vLLM venv is needed, nothing
is pinned, and `--standin-rate` lists the rates (pages/s with every slot full) measured in turn.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import platform as host
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import psutil

from bench.control_plane import cpu_seconds
from bench.gpu_path_figures import RunFigures, Sample, parse_metrics, ratio, run_figures, table, totals
from bench.gpu_standin import H100_PAGES_PER_S, StandinServer
from pagemill_eval.corpus import load_cases
from pagemill_eval.sections import write_section
from services.cli.supervise import redis_executable
from services.core.pdf import PDF, PDFIUM_LOCK, copy_page, open_pdf, pdf_text_layer
from services.core.settings import Settings
from services.worker.engines import PageInput
from services.worker.engines.vllm.engine import VllmEngine
from services.worker.engines.vllm.serve import pages_per_request
from services.worker.pipeline.inputs import prepare_input
from services.worker.pipeline.page import page_anchor, temperature_for
from tests.harness import CORPUS, REPO
from tests.servers import free_port, wait_for
from tests.vllm_server import VllmServer, cpu_list, engine_env, engine_settings

FINAL = {"succeeded", "partial", "failed", "cancelled"}
# Answers of the random-weight model are noise: stopped at the first of a few common characters once
# `min_tokens` are out, so a page is one request that finishes "stop" (never "length", which pagemill's checks
# would send up the temperature ladder) after about as many tokens as the bench asks for.
STOP = ["e", "a", " ", "|"]
STAGES = ("queue_wait", "fetch", "prepare", "anchor", "render", "engine", "align", "store")


@dataclass(frozen=True, slots=True)
class Source:
    """The first `pages` pages of one corpus PDF: one upload through pagemill, that many direct requests."""

    case_id: str
    path: Path
    pages: int


def choose_pages(corpus: Path, count: int, per_document: int) -> list[Source]:
    """Digital PDF pages of the corpus, up to `per_document` of each case in case order, `count` in all."""
    chosen: list[Source] = []
    left = count
    for case in sorted(load_cases(corpus), key=lambda c: c.case_id):
        if left <= 0:
            break
        if case.input_path.suffix.lower() != ".pdf" or "digital" not in case.kinds:
            continue
        with PDFIUM_LOCK:
            document = open_pdf(case.input_path.read_bytes())
            total = len(document)
            document.close()
        take = min(total, per_document, left)
        chosen.append(Source(case.case_id, case.input_path, take))
        left -= take
    if left > 0:
        raise SystemExit(f"{corpus} has {count - left} digital PDF pages, fewer than --pages {count}")
    return chosen


PINS = ("server", "model", "none")


@dataclass(frozen=True, slots=True)
class Placement:
    """The CPUs of vLLM's model (`model`) and those of the clients: this process, the direct client, and the
    whole `pagemill serve`. `pin` says where the rest of vLLM (its API server and engine core) runs: `server`,
    with the model; `model`, with the clients, as on a GPU host; `none`: no pinning at all."""

    pin: str = "none"
    model: set[int] | None = None
    clients: set[int] | None = None

    def line(self) -> str:
        if not self.model:
            return ("Not pinned (`--pin none`): vLLM and the clients share every CPU, so what the client side "
                    "spends is taken from the model's compute, as on vLLM-CPU and never on a GPU host.")
        model, clients = cpu_list(self.model), cpu_list(self.clients)
        if self.pin == "model":
            return (f"Pinned (`--pin model`, the default on 2 CPUs or more): vLLM's model process alone on CPU "
                    f"{model} (its OpenMP threads bound there by VLLM_CPU_OMP_THREADS_BIND); vLLM's API server and "
                    f"engine core, this bench with its direct client and the whole `pagemill serve` (gateway, "
                    f"Redis, workers, reconciler) on CPU {clients}. As on a GPU host, only the model's compute is "
                    f"off the CPU the rest shares; other processes of the machine still run on both.")
        return (f"Pinned (`--pin server`): vLLM (its API server, engine core and "
                f"model process, its OpenMP threads bound to the same CPUs by VLLM_CPU_OMP_THREADS_BIND) on CPU "
                f"{model} alone; this bench with its direct client, and the whole `pagemill serve` (gateway, "
                f"Redis, workers, reconciler), on CPU {clients}: vLLM's host side does not share the clients' CPU "
                f"(as it does on a GPU host) but shares the model's; other processes of the machine still run on "
                f"both.")


def placement(pin: str) -> Placement:
    """Pinned: vLLM's model on the last CPU this process may use, the clients on the others."""
    if pin == "none":
        return Placement()
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        raise SystemExit("--pin needs 2 CPUs or more: vLLM's model gets one, the clients the others")
    return Placement(pin=pin, model={cpus[-1]}, clients=set(cpus[:-1]))


def move_host_side(server_pid: int, cpus: set[int], nice: int = 0) -> int:
    """Every thread of vLLM's processes but its model process (`VLLM::Worker`) onto `cpus`, and at `nice` (Linux
    nices threads one by one) when it is not 0; returns how many threads moved. Threads they start later inherit
    the CPUs and nice of the thread that starts them."""
    moved = 0
    root = psutil.Process(server_pid)
    for process in [root, *root.children(recursive=True)]:
        if process.name().startswith("VLLM::Worker"):
            continue
        for thread in process.threads():
            try:
                os.sched_setaffinity(thread.id, cpus)
                if nice:
                    os.setpriority(os.PRIO_PROCESS, thread.id, nice)
            except OSError:  # a thread that just ended
                continue
            moved += 1
    return moved


def request_bodies(settings: Settings, sources: list[Source]) -> list[bytes]:
    """The request pagemill's worker sends for each page's first attempt, built the way it builds it: the page
    copied out of its PDF, the anchor, the render, then the engine's own `request_body`; JSON-encoded once here,
    so the direct client spends nothing on them while it runs."""
    if pages_per_request(settings) != 1:
        raise SystemExit("the bench sends one page per request: use a preset whose pages_per_request is 1")
    engine = VllmEngine(settings)
    bodies = []
    try:
        for source in sources:
            with PDFIUM_LOCK:
                document = open_pdf(source.path.read_bytes())
                singles = [copy_page(document, number) for number in range(1, source.pages + 1)]
                document.close()
            for index, data in enumerate(singles):
                page = PageInput(document_id=source.case_id, index=index, media_type=PDF, data=data)
                anchor, _ = page_anchor(page, settings)
                current = replace(page, text_layer=pdf_text_layer(data), anchor=anchor)
                prepared = prepare_input(engine, current, settings)
                body = engine.request_body(prepared, temperature=temperature_for(0, settings))
                bodies.append(json.dumps(body).encode())
    finally:
        engine.close()
    return bodies


class Sampler:
    """Reads vLLM's `/metrics` every `every_s` seconds on a thread of its own, keeping the gauges."""

    def __init__(self, url: str, every_s: float = 0.1) -> None:
        self.url, self.every_s = url, every_s
        self.samples: list[Sample] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        with httpx.Client(timeout=5) as client:
            while not self._stop.is_set():
                try:
                    text = client.get(f"{self.url}/metrics").text
                except httpx.HTTPError:
                    pass
                else:
                    self.samples.append(Sample.of(time.monotonic(), parse_metrics(text)))
                self._stop.wait(self.every_s)


def read_counters(url: str) -> dict[str, float]:
    return parse_metrics(httpx.get(f"{url}/metrics", timeout=10).text)


async def _fire(url: str, bodies: list[bytes], concurrency: int) -> None:
    """The bodies through `concurrency` workers sharing one connection pool, as pagemill's GPU worker keeps
    `max_in_flight` requests open; a failed request fails the run."""
    queue: asyncio.Queue[bytes] = asyncio.Queue()
    for body in bodies:
        queue.put_nowait(body)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=url, timeout=600, limits=limits) as client:

        async def worker() -> None:
            while not queue.empty():
                body = queue.get_nowait()
                response = await client.post("/v1/chat/completions", content=body,
                                             headers={"Content-Type": "application/json"})
                if response.status_code != 200:
                    raise RuntimeError(f"vLLM answered {response.status_code}: {response.text[:500]}")

        await asyncio.gather(*(worker() for _ in range(concurrency)))


def direct_run(url: str, bodies: list[bytes], concurrency: int, sampler: Sampler) -> RunFigures:
    before = read_counters(url)
    started = time.monotonic()
    asyncio.run(_fire(url, bodies, concurrency))
    ended = time.monotonic()
    return run_figures("direct", len(bodies), started, ended, before, read_counters(url), sampler.samples)


class Pagemill:
    """`pagemill serve` on a fresh data dir (embedded Redis, SQLite, local folder), engine vllm."""

    def __init__(self, workdir: Path, engine: dict[str, Any], cpus: set[int] | None = None,
                 way: str = "pagemill", tree: Path = REPO, port: int | None = None,
                 redis_port: int | None = None) -> None:
        self.way = way  # the run's name in the table
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.data = workdir / "pagemill"
        self.log_path = workdir / "pagemill-serve.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith("PAGEMILL_")}
        env.update(engine_env(engine))
        # The same pages again and again: no result cache; and no rate limit on the bench's own uploads.
        env.update(PAGEMILL_LOG_LEVEL="WARNING", PAGEMILL_CACHE__ENABLED="false",
                   PAGEMILL_LIMITS__REQUESTS_PER_MINUTE="100000")
        pinned = ["taskset", "-c", cpu_list(cpus)] if cpus else []  # every process it starts inherits it
        # `serve` starts an embedded Redis on a free port; on a port of the bench's own when it is given one.
        self.redis: subprocess.Popen[bytes] | None = None
        if redis_port:
            self.data.mkdir(parents=True, exist_ok=True)
            self.redis = subprocess.Popen(
                [*pinned, redis_executable(), "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "no", "--dir", str(self.data)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True)
            env["PAGEMILL_REDIS_URL"] = f"redis://127.0.0.1:{redis_port}/0"
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [*pinned, sys.executable, "-m", "services.cli", "serve", "--port", str(self.port), "--data-dir",
                 str(self.data)], cwd=tree, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        wait_for(self._ready, 180, "pagemill serve")
        key = (self.data / "api_key").read_text().strip()
        self.client = httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {key}"}, timeout=120)

    @property
    def pids(self) -> list[int]:
        """`pagemill serve`'s process, then the Redis the bench started for it, if any."""
        return [self.process.pid, *([self.redis.pid] if self.redis is not None else [])]

    def _ready(self) -> bool:
        if self.process.poll() is not None:
            raise RuntimeError(f"pagemill serve exited with {self.process.returncode}: see {self.log_path}")
        try:
            return httpx.get(f"{self.url}/readyz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self) -> None:
        self.client.close()
        os.killpg(self.process.pid, signal.SIGTERM)
        self.process.wait(60)
        if self.redis is not None:
            self.redis.terminate()
            self.redis.wait(30)

    def stage_seconds(self) -> dict[str, tuple[float, float]]:
        """(seconds, pages) so far of each stage of the vllm engine's pages, from pagemill's own /metrics."""
        sums: dict[str, list[float]] = {}
        for line in self.client.get("/metrics").text.splitlines():
            for suffix, slot in (("_sum", 0), ("_count", 1)):
                name = f"pagemill_page_stage_seconds{suffix}{{"
                if line.startswith(name) and 'engine="vllm"' in line:
                    stage = line.split('stage="', 1)[1].split('"', 1)[0]
                    sums.setdefault(stage, [0.0, 0.0])[slot] += float(line.rsplit(" ", 1)[1])
        return {stage: (value[0], value[1]) for stage, value in sums.items()}

    def run(self, sources: list[Source], vllm_url: str, sampler: Sampler) -> tuple[RunFigures, dict[str, Any]]:
        """The sources uploaded one after another, then each waited for; the clock stops at the last
        `succeeded`. Also returns what pagemill's pages say (engine, attempts, fallbacks)."""
        before = read_counters(vllm_url)
        started = time.monotonic()
        ids = []
        for source in sources:
            response = self.client.post(
                "/v1/documents", files={"file": (source.path.name, source.path.read_bytes())},
                data={"cache": "false", "mode": "accurate", "pages": f"1-{source.pages}"})
            response.raise_for_status()
            ids.append(response.json()["id"])
        states = [self._wait(document_id) for document_id in ids]
        ended = time.monotonic()
        figures = run_figures(self.way, sum(s.pages for s in sources), started, ended, before,
                              read_counters(vllm_url), sampler.samples)
        not_ok = [s["status"] for s in states if s["status"] != "succeeded"]
        pages = [page for document_id in ids for page in self.client.get(
            f"/v1/documents/{document_id}/result", params={"format": "json"}).json()["pages"]]
        return figures, {"not_succeeded": not_ok, "attempts": sum(p.get("attempts") or 1 for p in pages),
                         "fallbacks": sum(1 for p in pages if p.get("is_fallback")),
                         "not_vllm": sum(1 for p in pages if p.get("engine") != "vllm"),
                         "output": output_digest(pages)}

    def _wait(self, document_id: str) -> dict[str, Any]:
        while True:
            state: dict[str, Any] = self.client.get(f"/v1/documents/{document_id}", params={"wait": 30}).json()
            if state["status"] in FINAL:
                return state


GPU_WORKER = "pagemill-gpu@local"  # the `--name` of the vLLM page worker `pagemill serve` starts


def cpu_parts(pids: list[int]) -> dict[str, float]:
    """CPU seconds so far of `pagemill serve` (the first pid) and its processes, by part: the GPU worker (with its
    pool), the `serve` process itself (the gateway), and the rest (the other workers, reconciler, Redis; any
    further pid, such as a Redis the bench started, counts there too)."""
    parts = {"GPU worker": 0.0, "gateway": 0.0, "others": 0.0}
    for index, pid in enumerate(pids):
        try:
            root = psutil.Process(pid)
            processes = [root, *root.children(recursive=True)]
        except psutil.Error:
            continue
        gpu: set[int] = set()
        for process in processes:
            try:
                if GPU_WORKER in process.cmdline():
                    gpu |= {process.pid, *(child.pid for child in process.children(recursive=True))}
                times = process.cpu_times()
            except psutil.Error:  # a pool process that just ended
                continue
            part = ("GPU worker" if process.pid in gpu or GPU_WORKER in " ".join(process.cmdline())
                    else "gateway" if index == 0 and process.pid == pid else "others")
            parts[part] += times.user + times.system
    return parts


class CpuClock:
    """CPU seconds of the server's processes and of the client side (this process, and the pagemill serve of the
    run with its processes, by part) per way: on vLLM-CPU both may draw on the same cores."""

    def __init__(self, vllm_pid: int, server: str = "vLLM") -> None:
        self.vllm_pid, self.server = vllm_pid, server
        self.per_way: dict[str, dict[str, float]] = {}  # way -> pages, server s, bench s and pagemill's parts

    def _now(self, client_pids: list[int] | None) -> dict[str, float]:
        return {"server": cpu_seconds(self.vllm_pid), "bench": time.process_time(),
                **(cpu_parts(client_pids) if client_pids else {})}

    def start(self, client_pids: list[int] | None = None) -> dict[str, float]:
        return self._now(client_pids)

    def stop(self, way: str, pages: int, started: dict[str, float], client_pids: list[int] | None = None) -> None:
        ended = self._now(client_pids)
        totals_ = self.per_way.setdefault(way, {})
        totals_["pages"] = totals_.get("pages", 0.0) + pages
        for key, value in ended.items():
            totals_[key] = totals_.get(key, 0.0) + value - started.get(key, 0.0)

    def line(self) -> str:
        parts = []
        for way, spent in self.per_way.items():
            ms = {key: 1000 * value / spent["pages"] for key, value in spent.items() if key != "pages"}
            client = sum(value for key, value in ms.items() if key != "server")
            split = ", ".join(f"{key} {value:.0f}" for key, value in ms.items() if key not in ("server", "bench"))
            parts.append(f"{way}: {self.server} {ms['server']:.0f} ms, client side {client:.0f} ms"
                         + (f" ({split}, this bench {ms['bench']:.0f})" if split else ""))
        return "; ".join(parts)


def stage_lines(before: dict[str, tuple[float, float]], after: dict[str, tuple[float, float]]) -> str:
    """Mean milliseconds per page of each stage over the measured pagemill runs."""
    parts = []
    for stage in STAGES:
        seconds = after.get(stage, (0.0, 0.0))[0] - before.get(stage, (0.0, 0.0))[0]
        pages = after.get(stage, (0.0, 0.0))[1] - before.get(stage, (0.0, 0.0))[1]
        if pages:
            parts.append(f"{stage} {1000 * seconds / pages:.0f} ms")
    return ", ".join(parts)


def baseline_name(tree: Path) -> str:
    """The baseline's revision as `git describe` names it, or its folder's name outside a git checkout."""
    try:
        described = subprocess.run(["git", "-C", str(tree), "describe", "--always", "--dirty"], capture_output=True,
                                   text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        described = ""
    return described or tree.name


def request_extra(args: argparse.Namespace) -> dict[str, Any]:
    return {"stop": STOP, "min_tokens": args.min_tokens}


Checks = list[tuple[int, dict[str, Any]]]  # (run number, what its pages say)


def measure(url: str, bodies: list[bytes], sources: list[Source], pagemills: list[Pagemill], rounds: int,
            concurrency: int, sampler: Sampler, cpu: CpuClock) -> tuple[list[RunFigures], Checks, str]:
    """`rounds` of the direct client then each pagemill (in turn reversed, so none always runs right after the
    direct client); the runs, what pagemill's pages say, and the mean stage times and CPU per page."""
    runs: list[RunFigures] = []
    checks: Checks = []
    stages_before = {pagemill.way: pagemill.stage_seconds() for pagemill in pagemills}
    for round_number in range(rounds):
        clock = cpu.start()
        runs.append(direct_run(url, bodies, concurrency, sampler))
        cpu.stop("direct", len(bodies), clock)
        print(runs[-1], flush=True)
        for pagemill in pagemills if round_number % 2 == 0 else pagemills[::-1]:
            clock = cpu.start(pagemill.pids)
            figures, check = pagemill.run(sources, url, sampler)
            cpu.stop(pagemill.way, len(bodies), clock, pagemill.pids)
            runs.append(figures)
            checks.append((len(runs), check))
            print(figures, check, flush=True)
    stages = "; ".join(
        (f"{pagemill.way}: " if len(pagemills) > 1 else "")
        + stage_lines(stages_before[pagemill.way], pagemill.stage_seconds()) for pagemill in pagemills)
    stages += f". CPU time per page (the processes' user + system): {cpu.line()}"
    return runs, checks, stages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--server", choices=("vllm", "standin"), default="vllm",
                        help="vllm (default): a real `vllm serve` on CPU; standin: bench/gpu_standin.py, a server "
                             "timed like a GPU engine that spends no CPU on the model (no vLLM venv needed)")
    parser.add_argument("--venv", type=Path, default=Path(os.environ.get("PAGEMILL_VLLM_VENV", ".venv-vllm")),
                        help="the vLLM venv of `make vllm-env` (its models/tiny-vlm)")
    parser.add_argument("--corpus", type=Path, default=CORPUS / "dev")
    parser.add_argument("--pages", type=int, default=24)
    parser.add_argument("--per-document", type=int, default=4, help="pages taken from each PDF at most")
    parser.add_argument("--repeat", type=int, default=1,
                        help="each run sends the chosen pages this many times over (a longer run, in which the "
                             "start, before the batch is full, and the end weigh less)")
    parser.add_argument("--rounds", type=int, default=3, help="direct+pagemill pairs after the warm-up")
    parser.add_argument("--max-in-flight", type=int, default=8, help="pagemill's engine.max_in_flight (default 8)")
    parser.add_argument("--min-tokens", type=int, default=192, help="tokens each answer has at least")
    parser.add_argument("--max-tokens", type=int, default=256)
    # The tiny model's context is 4,096 tokens and its tokenizer spends ~2.6 tokens per Korean character: 1,000
    # characters of anchor keep every chosen page's prompt and answer inside it.
    parser.add_argument("--anchor-max-chars", type=int, default=1000)
    parser.add_argument("--prepare-processes", default="0",
                        help="pagemill's engine.prepare_processes (default 0, the engine's: in the worker's threads); "
                             "several, comma-separated (0,2): one pagemill serve each, as --prepare-at-once")
    parser.add_argument("--prepare-at-once", default="2",
                        help="pagemill's engine.prepare_at_once (default 2, the engine's); several, comma-separated "
                             "(0,2): one pagemill serve each, their runs alternating with the direct client's")
    parser.add_argument("--pin", choices=PINS, default=None,
                        help="model (default with vllm on 2 CPUs or more): vLLM's model process on a CPU of its own, "
                             "its API server and engine core with the clients (this process, pagemill serve) on the "
                             "others, as on a GPU host; server: all of vLLM on that CPU; none (the stand-in's only "
                             "one): no pinning")
    parser.add_argument("--host-nice", type=int, default=0,
                        help="with --pin model: vLLM's API server and engine core at this nice (0: as started). "
                             "Their readers of vLLM's shared-memory queues spin (sched_yield) for 1 s after each "
                             "message, which on a GPU host takes a core of their own and here the clients' CPU")
    parser.add_argument("--standin-rate", default=str(H100_PAGES_PER_S),
                        help="with --server standin: its pages/s with every slot full, comma-separated for several "
                             "(each measured in turn on the same servers); default LightOnOCR's 5.71 on one H100")
    parser.add_argument("--standin-tokens", type=int, default=192, help="tokens every stand-in answer is timed for")
    parser.add_argument("--standin-prefill-ms", type=float, default=50.0)
    parser.add_argument("--ports", type=int, default=None,
                        help="the first of the ports to use (the server, then each pagemill serve and its Redis); "
                             "default: free ones")
    parser.add_argument("--baseline", type=Path, default=None,
                        help="a checkout of another revision (`git worktree add /tmp/base main`): its `pagemill serve` "
                             "(run from there with this venv) is one more way, so two revisions compare in one run")
    parser.add_argument("--write", type=Path, default=None, help="update this Markdown file's gpu-path section")
    args = parser.parse_args()
    standin = args.server == "standin"
    if args.pin is None:
        args.pin = "model" if not standin and len(os.sched_getaffinity(0)) >= 2 else "none"
    if standin and args.pin != "none":
        raise SystemExit("--pin is vLLM's: the stand-in spends no CPU on the model, so nothing is pinned")
    ports = iter(range(args.ports, args.ports + 50)) if args.ports else None

    def port() -> int:
        if not ports:
            return free_port()
        number = next(ports)
        with socket.socket() as sock:  # a server already there would answer the bench's health checks
            try:
                sock.bind(("127.0.0.1", number))
            except OSError as exc:
                raise SystemExit(f"port {number} (--ports) is in use: {exc}") from exc
        return number

    venv = args.venv.resolve()
    # (prepare_processes, prepare_at_once) of each pagemill serve; one of the two options may list several
    processes_list = [int(value) for value in args.prepare_processes.split(",")]
    at_once_list = [int(value) for value in args.prepare_at_once.split(",")]
    if len(processes_list) > 1 and len(at_once_list) > 1:
        raise SystemExit("several values for --prepare-processes or for --prepare-at-once, not for both")
    variants = [(p, a) for p in processes_list for a in at_once_list]
    rates: list[float | None] = [float(r) for r in args.standin_rate.split(",")] if standin else [None]
    place = placement(args.pin)
    if place.clients:
        os.sched_setaffinity(0, place.clients)  # the direct client, the sampler and the uploads
    sources = choose_pages(args.corpus, args.pages, args.per_document)
    with tempfile.TemporaryDirectory(prefix="pagemill-gpu-path-") as tmp:
        workdir = Path(tmp)
        server: VllmServer | StandinServer
        if standin:
            server_port = port()
            server = StandinServer(server_port, workdir / "standin.log", rate=rates[0] or H100_PAGES_PER_S,
                                   max_num_seqs=args.max_in_flight, tokens=args.standin_tokens,
                                   prefill_ms=args.standin_prefill_ms)
            engine = engine_settings(venv, server_port)  # the serve block is unused: nothing is started from it
        else:
            server = VllmServer(venv, workdir)
            engine = server.engine
        # pagemill's defaults where the tier shrinks them (max_in_flight, and so --max-num-seqs), the bench's
        # token budget and stop rule.
        engine.update(max_in_flight=args.max_in_flight, max_tokens=args.max_tokens, request_extra=request_extra(args),
                      max_attempts=3, anchor_max_chars=args.anchor_max_chars)
        settings = Settings(engine=engine)  # type: ignore[arg-type]  # pydantic validates the dict
        if isinstance(server, VllmServer):
            server.settings = settings
            if place.pin == "server":
                server.cpus = place.model
            elif place.pin == "model":  # the model's threads bound by vLLM itself, the rest moved once it is up
                os.environ["VLLM_CPU_OMP_THREADS_BIND"] = cpu_list(place.model)
        bodies = request_bodies(settings, sources) * args.repeat
        sources = sources * args.repeat
        print(f"{len(bodies)} pages from {len(set(sources))} PDFs; starting {args.server}", flush=True)
        server.start()
        if place.pin == "model":
            assert server.process is not None and place.clients
            print(f"{move_host_side(server.process.pid, place.clients, args.host_nice)} threads of vLLM moved",
                  flush=True)
        pagemills: list[Pagemill] = []
        measured: list[tuple[float | None, list[RunFigures], Checks, str]] = []
        try:
            print(f"{args.server} up in {server.startup_s:.1f} s; starting pagemill serve", flush=True)
            for processes, at_once in variants:
                way = ("pagemill" if len(variants) == 1 else f"pagemill, prepare_at_once {at_once}"
                       if len(at_once_list) > 1 else f"pagemill, prepare_processes {processes}")
                (workdir / f"{processes}-{at_once}").mkdir()
                pagemills.append(Pagemill(workdir / f"{processes}-{at_once}", {
                    **engine, "prepare_processes": processes, "prepare_at_once": at_once},
                    cpus=place.clients, way=way, port=port(), redis_port=port() if ports else None))
            if args.baseline:
                (workdir / "baseline").mkdir()
                pagemills.append(Pagemill(workdir / "baseline", {
                    **engine, "prepare_processes": variants[0][0], "prepare_at_once": variants[0][1]},
                    cpus=place.clients, way=f"pagemill at {baseline_name(args.baseline)}", tree=args.baseline,
                    port=port(), redis_port=port() if ports else None))
            assert server.process is not None
            with Sampler(server.url) as sampler:
                direct_run(server.url, bodies, args.max_in_flight, sampler)  # warm-ups, not counted
                for pagemill in pagemills:
                    pagemill.run(sources, server.url, sampler)
                for rate in rates:
                    if rate is not None and isinstance(server, StandinServer):
                        step = server.set_rate(rate)
                        print(f"stand-in at {rate} pages/s: a step of {1000 * step:.2f} ms", flush=True)
                    cpu = CpuClock(server.process.pid, "vLLM" if not standin else "the stand-in")
                    measured.append((rate, *measure(server.url, bodies, sources, pagemills, args.rounds,
                                                    args.max_in_flight, sampler, cpu)))
        finally:
            for pagemill in pagemills:
                pagemill.stop()
            server.stop()
    if isinstance(server, StandinServer):
        text = standin_report(args, sources, measured)
    else:
        _, runs, checks, stages = measured[0]
        text = report(args, sources, runs, checks, stages, server, place)
    print(text)
    if args.write:
        write_section(args.write, text, name="gpu-path-standin" if standin else "gpu-path")


def report(args: argparse.Namespace, sources: list[Source], runs: list[RunFigures],
           checks: list[tuple[int, dict[str, Any]]], stages: str, server: VllmServer, place: Placement) -> str:
    command = (f"make bench-gpu-path  # python -m bench.gpu_path {common_flags(args)}"
               + (f" --pin {args.pin}" if args.pin != "model" else "")
               + (f" --host-nice {args.host_nice}" if args.host_nice else ""))
    processes = args.prepare_processes
    return "\n".join([
        "## The GPU path: pagemill beside a direct client on one vLLM server (`make bench-gpu-path`)", "",
        f"Command: `{command}`  ",
        f"Machine: {os.cpu_count()} cores, {host.machine()}, Python {host.python_version()}, 1-minute load "
        f"{os.getloadavg()[0]:.1f} at the end; measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. "
        f"vLLM {(REPO / 'VLLM_VERSION').read_text().strip()} on CPU serving the tiny random-weight Qwen2-VL of "
        f"`make test-vllm` (started in {server.startup_s:.0f} s), preset generic, `--max-num-seqs "
        f"{args.max_in_flight}`; {args.pages} digital pages of {len(set(sources))} dev PDFs "
        f"({', '.join(dict.fromkeys(s.case_id for s in sources))})"
        + (f", sent {args.repeat} times over in each run" if args.repeat != 1 else "")
        + f", max_tokens {args.max_tokens}, request extras "
        f"`{json.dumps(request_extra(args))}`; {args.max_in_flight} requests in flight either way; pagemill's GPU "
        f"worker prepares pages in {processes} process{'es' if processes != '1' else ''} "
        f"(engine.prepare_processes; 0: in its own threads, engine.prepare_at_once {args.prepare_at_once} at "
        f"once). A warm-up of each way first, then the ways alternate.", "",
        f"**{place.line()}**"
        + (f" vLLM's API server and engine core at nice {args.host_nice} (`--host-nice`): their shared-memory "
           f"readers spin for 1 s after each message, which a GPU host gives a core of its own; niced, they take "
           f"what the clients leave." if args.host_nice and place.pin == "model" else ""), "",
        *table(runs), "",
        outcome(runs, checks, stages),
    ])


def outcome(runs: list[RunFigures], checks: list[tuple[int, dict[str, Any]]], stages: str) -> str:
    """Each pagemill way against the direct client, what pagemill's pages say, and the stage times."""
    direct = totals("direct", runs)
    reached = []
    for way in dict.fromkeys(run.way for run in runs if run.way != "direct"):
        through = totals(way, runs)
        reached.append(
            f"{way} reached **{ratio(through.pages_per_s, direct.pages_per_s):.2f}** of the direct client's pages/s "
            f"(goal ≥ 0.95): {through.pages_per_s:.2f} against {direct.pages_per_s:.2f} pages/s, "
            f"{through.tokens_per_s:.1f} against {direct.tokens_per_s:.1f} generated tokens/s; the server sat idle "
            f"(nothing running or waiting) in {100 * through.idle_share:.0f} % of the samples while its pages were "
            f"not done ({100 * direct.idle_share:.0f} % in the direct runs).")
    return (" ".join(reached) + " pagemill's pages: "
            + "; ".join(f"run {number}: {c['attempts']} attempts, {c['fallbacks']} fallbacks, "
                        f"{c['not_vllm']} not on vLLM, documents not succeeded {c['not_succeeded'] or 'none'}, "
                        f"output {c['output']}"
                        for number, c in checks)
            + f". Mean per page in pagemill's measured runs (pagemill_page_stage_seconds): {stages}.")


def output_digest(pages: list[dict[str, Any]]) -> str:
    """What a run's pages say (text, elements, confidence, tokens), in upload and page order, as a short hash:
    the stand-in's answers are deterministic, so two runs or two revisions with the same pages agree on it."""
    said = [{key: page.get(key) for key in OUTPUT_KEYS} for page in pages]
    return hashlib.sha256(json.dumps(said, sort_keys=True).encode()).hexdigest()[:12]


OUTPUT_KEYS = ("page_number", "markdown", "elements", "confidence", "finish_reason", "prompt_tokens",
               "completion_tokens", "width", "height", "rotation", "is_fallback")


def common_flags(args: argparse.Namespace) -> str:
    return (f"--pages {args.pages} --per-document {args.per_document}"
            + (f" --repeat {args.repeat}" if args.repeat != 1 else "")
            + f" --rounds {args.rounds} --max-in-flight "
            f"{args.max_in_flight} --min-tokens {args.min_tokens} --max-tokens {args.max_tokens} "
            f"--anchor-max-chars {args.anchor_max_chars}"
            + (f" --prepare-processes {args.prepare_processes}" if args.prepare_processes != "0" else "")
            + (f" --prepare-at-once {args.prepare_at_once}" if args.prepare_at_once != "2" else "")
            + (f" --baseline {baseline_name(args.baseline)}" if args.baseline else ""))


def standin_report(args: argparse.Namespace, sources: list[Source],
                   measured: list[tuple[float | None, list[RunFigures], Checks, str]]) -> str:
    command = (f"make bench-gpu-path-standin  # python -m bench.gpu_path --server standin --standin-rate "
               f"{args.standin_rate} --standin-tokens {args.standin_tokens} --standin-prefill-ms "
               f"{args.standin_prefill_ms:g} {common_flags(args)}")
    lines = [
        "## The GPU path against a GPU stand-in (`make bench-gpu-path-standin`)", "",
        f"Command: `{command}`  ",
        f"Machine: {os.cpu_count()} cores, {host.machine()}, Python {host.python_version()}, 1-minute load "
        f"{os.getloadavg()[0]:.1f} at the end; measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. "
        f"The server is bench/gpu_standin.py: vLLM's HTTP contract and `/metrics`, no model: at most "
        f"{args.max_in_flight} requests running (`max_num_seqs`), the rest waiting in arrival order, each running "
        f"request held for {args.standin_prefill_ms:g} ms of prefill + {args.standin_tokens} tokens × a step that "
        f"does not grow with the batch (a GPU's), the step set so that full slots make the rate below; every "
        f"answer is the page's anchor cut to {args.standin_tokens} tokens. Not pinned: the stand-in sleeps, so "
        f"pagemill and the direct client have both cores, as on a GPU host. The same {args.pages} digital pages "
        f"of {len(set(sources))} dev PDFs"
        + (f" ({args.repeat} times over in each run)" if args.repeat != 1 else "")
        + f", the same requests (the engine's own `request_body`), {args.max_in_flight} "
        f"in flight either way; pagemill's GPU worker prepares pages in {args.prepare_processes} processes "
        f"(0: in its own threads, engine.prepare_at_once {args.prepare_at_once} at once). A warm-up of each way "
        f"first, then, rate by rate, the ways alternate.",
    ]
    for rate, runs, checks, stages in measured:
        anchor = " (LightOnOCR-2-1B's on one H100, the fastest published OCR model)" if rate == H100_PAGES_PER_S else ""
        lines += ["", f"**At {rate:g} pages/s{anchor}**", "",
                  *table(runs), "", outcome(runs, checks, stages)]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
