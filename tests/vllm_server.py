"""A real `vllm serve` for the tests: vLLM on CPU serving the tiny random-weight Qwen2-VL that
`scripts/vllm/setup.sh` builds, started from the same command line `pagemill vllm-command` prints (and
`--enable-log-requests`, whose "Added request" lines the tests wait on).

The venv comes from `PAGEMILL_VLLM_VENV` (`make test-vllm` sets it). Without one the `vllm_server` fixture
fails the test, never skips it: a green run must mean vLLM really answered. Only `make test-vllm` selects the
tests that use it (`-m vllm`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from services.core.settings import Settings
from services.worker.engines.vllm.serve import vllm_command
from tests.servers import free_port

SERVED_NAME = "tiny-vlm"
START_TIMEOUT_S = float(os.environ.get("PAGEMILL_VLLM_START_TIMEOUT", "420"))


def engine_settings(venv: Path, port: int, preset: str = "generic", **serve: Any) -> dict[str, Any]:
    """The engine settings the tier runs with: a preset (generic unless asked) on the tiny model, small token
    budgets; the server is started with that preset's own serve flags and speculative method."""
    return {
        "kind": "vllm", "preset": preset, "model": SERVED_NAME, "vllm_url": f"http://127.0.0.1:{port}",
        "max_in_flight": 4, "max_tokens": 48, "max_attempts": 3, "anchor_max_chars": 1500,
        "request_timeout_s": 120,
        "serve": {
            "model_path": str(venv / "models" / "tiny-vlm"), "host": "127.0.0.1", "port": port,
            # CPU: no fp8 weights or KV cache; the real deployment keeps the fp8 defaults.
            "quantization": "", "kv_cache_dtype": "", "max_model_len": 4096,
            # Several images per request: the multi-page presets' requests (the tiny model's processor caps
            # every image at 224x224 pixels, 64 tokens, so four fit the context).
            "max_images": 4,
            "extra_args": ["--dtype", "bfloat16", "--enforce-eager", "--max-num-batched-tokens", "4096"],
            **serve,
        },
    }


def cpu_list(cpus: set[int] | None) -> str:
    """CPUs as taskset and VLLM_CPU_OMP_THREADS_BIND write them: "0,2,3"."""
    return ",".join(str(cpu) for cpu in sorted(cpus or ()))


def engine_env(settings: dict[str, Any], prefix: str = "PAGEMILL_ENGINE__") -> dict[str, str]:
    """The same settings as environment variables, the way the worker processes read them."""
    env: dict[str, str] = {}
    for key, value in settings.items():
        name = prefix + key.upper()
        if isinstance(value, dict) and key == "serve":
            env.update(engine_env(value, name + "__"))
        elif isinstance(value, dict | list):
            env[name] = json.dumps(value)
        else:
            env[name] = str(value)
    return env


class VllmServer:
    def __init__(self, venv: Path, workdir: Path, preset: str = "generic", command: list[str] | None = None,
                 **serve: Any) -> None:
        self.venv = venv
        self.preset = preset
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.engine = engine_settings(venv, self.port, preset, **serve)
        self.settings = Settings(engine=self.engine)
        self.log_path = workdir / "vllm-server.log"
        self.command = command  # a whole `vllm serve` argv, instead of the one built from the settings
        self.process: subprocess.Popen[bytes] | None = None
        self.startup_s = 0.0
        # CPUs the server (all its processes, and its OpenMP threads) is pinned to; None: wherever the OS puts it
        self.cpus: set[int] | None = None
        if command is None:
            with open(venv / "models" / "tiny-vlm" / "tokenizer.json") as handle:
                vocab = json.load(handle)["added_tokens"]
            self.eos_id = next(token["id"] for token in vocab if token["content"] == "<|im_end|>")

    @property
    def argv(self) -> list[str]:
        # --enable-log-requests: the server logs "Added request <id>." when a request enters its engine, a signal
        # the tests wait on instead of sampling vLLM's gauges (a short request is over between two samples).
        command = self.command or vllm_command(self.settings, executable=str(self.venv / "bin" / "vllm"))
        pinned = ["taskset", "-c", cpu_list(self.cpus)] if self.cpus else []
        return [*pinned, *command, "--enable-log-requests"]

    def start(self, timeout_s: float = START_TIMEOUT_S) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PAGEMILL_")}
        # Loopback only; a small KV cache; never a model hub; no usage reports.
        env.update(VLLM_HOST_IP="127.0.0.1", VLLM_CPU_KVCACHE_SPACE="1", HF_HUB_OFFLINE="1",
                   TRANSFORMERS_OFFLINE="1", VLLM_NO_USAGE_STATS="1", DO_NOT_TRACK="1", VLLM_TARGET_DEVICE="cpu")
        if self.cpus:
            # vLLM-CPU binds its OpenMP threads itself (OMP_PLACES and OMP_PROC_BIND for the model's process); its
            # `auto` binding keeps one allowed CPU out for the scheduler. Named here, the threads get exactly these.
            env["VLLM_CPU_OMP_THREADS_BIND"] = cpu_list(self.cpus)
        started = time.monotonic()
        with self.log_path.open("ab") as log:
            log.write(f"\n$ {' '.join(self.argv)}\n".encode())
            log.flush()
            self.process = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT, env=env,
                                            start_new_session=True)
        while time.monotonic() - started < timeout_s:
            process = self.process
            if process is None:  # stop() from another thread
                raise RuntimeError("vllm serve was stopped before it answered /health")
            if process.poll() is not None:
                raise RuntimeError(f"vllm serve exited with {process.returncode}:\n{self.log_tail()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/health", timeout=2).status_code == 200:
                    self.startup_s = time.monotonic() - started
                    return
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"vllm serve did not answer /health within {timeout_s:.0f}s:\n{self.log_tail()}")

    def stop(self) -> None:
        """SIGINT to the server (a clean shutdown), then its own process group if it lingers."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGINT)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()

    def kill(self) -> None:
        """SIGKILL to the server's whole process group, as a crashed or evicted server: requests in flight die."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def metrics(self) -> dict[str, float]:
        """vLLM's own Prometheus counters, summed over their labels."""
        text = httpx.get(f"{self.url}/metrics", timeout=10).text
        totals: dict[str, float] = {}
        for line in text.splitlines():
            match = re.match(r"^(vllm:[a-zA-Z0-9_:]+)(?:\{[^}]*\})?\s+([0-9.eE+-]+)$", line)
            if match:
                totals[match.group(1)] = totals.get(match.group(1), 0.0) + float(match.group(2))
        return totals

    def log_size(self) -> int:
        return self.log_path.stat().st_size if self.log_path.exists() else 0

    def requests_open(self, since: int = 0) -> int:
        """Requests in the server's engine now, from its log after byte `since`: those that entered it ("Added
        request", logged by `--enable-log-requests`) less those answered (the access log's line for each completion,
        written when its answer is sent). Log lines stay where a gauge returns to 0 between two samples."""
        if not self.log_path.exists():
            return 0
        with self.log_path.open("rb") as handle:
            handle.seek(since)
            log = handle.read()
        added = len(re.findall(rb"Added request \S+\.", log))
        return added - len(re.findall(rb'"POST /v1/chat/completions HTTP/1\.1" \d{3}', log))

    def log_tail(self, chars: int = 4000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:] if self.log_path.exists() else ""


def _served(tmp_path_factory: pytest.TempPathFactory, preset: str, **serve: Any) -> Iterator[VllmServer]:
    venv = os.environ.get("PAGEMILL_VLLM_VENV")
    if not venv or not (Path(venv) / "bin" / "vllm").exists():
        pytest.fail("no vLLM venv: run `make test-vllm` (it builds one with scripts/vllm/setup.sh)")
    server = VllmServer(Path(venv), tmp_path_factory.mktemp(f"vllm-{preset}"), preset, **serve)
    try:
        server.start()
    except RuntimeError as exc:
        pytest.fail(str(exc))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def vllm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VllmServer]:
    """The generic preset's server: n-gram speculation, prefix caching (vLLM's default)."""
    yield from _served(tmp_path_factory, "generic")


@pytest.fixture(scope="session")
def hunyuan_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VllmServer]:
    """hunyuan_ocr's own serve flags: no speculation, no prefix caching, no multimodal processor cache, two
    images per request (and more, for the tier). Its greedy `top_k` 1 does not go to the n-gram server: there a
    request whose prompt was a prefix-cache hit but for a few tokens crashed vLLM 0.32's CPU engine
    (`apply_top_k_only` on an empty tensor in the rejection sampler)."""
    yield from _served(tmp_path_factory, "hunyuan_ocr")
