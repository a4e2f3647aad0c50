"""`pagemill serve` leaves no process behind, however it ends, and starts again at once on the same port and data.

Every process `serve` starts (the embedded Redis, the workers and their pool processes, the reconciler) carries
a token in its environment; after `serve` ends, none may be left. What is guaranteed (services/cli/supervise.py):
SIGTERM to the process group or to `serve` alone stops everything and exits 0; SIGKILL of `serve` makes the
kernel send SIGTERM to each child (PR_SET_PDEATHSIG), which then ends on its own; a child that dies makes
`serve` stop everything and exit 1.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import psutil
import pytest

from tests.harness import REPO
from tests.pdfs import text_page
from tests.servers import free_port, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not sys.platform.startswith("linux"),
                                                   reason="the SIGKILL guarantee rests on Linux's prctl")]
TOKEN_VAR = "SERVE_TEST_TOKEN"  # marks the processes of one test (not a PAGEMILL_ setting)
GONE_WITHIN_S = 45.0


@dataclass
class Served:
    process: subprocess.Popen[bytes]
    url: str
    data_dir: Path
    token: str


def ours(served: Served) -> list[psutil.Process]:
    """Every live process, whatever its parent, whose environment carries the token — or, for redis-server,
    which overwrites its environment with its process title, whose working directory is the data directory."""
    found = []
    for process in psutil.process_iter():
        try:
            if process.status() == psutil.STATUS_ZOMBIE:
                continue
            if process.environ().get(TOKEN_VAR) == served.token or Path(process.cwd()) == served.data_dir:
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied, OSError):
            continue
    return found


def describe(processes: list[psutil.Process]) -> str:
    lines = []
    for process in processes:
        try:
            lines.append(f"{process.pid} {' '.join(process.cmdline())[:120]}")
        except psutil.Error:
            lines.append(str(process.pid))
    return "; ".join(lines)


def start(tmp_path: Path, port: int, data_dir: Path, started: list[Served], **settings: str) -> Served:
    token = uuid.uuid4().hex
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAGEMILL_") and k != "PROMETHEUS_MULTIPROC_DIR"}
    env.update({"PYTHONPATH": str(REPO), TOKEN_VAR: token, "PAGEMILL_ENGINE__KIND": "fake", **settings})
    log = (tmp_path / f"serve-{token[:8]}.log").open("wb")
    process = subprocess.Popen([sys.executable, "-m", "services.cli", "serve", "--port", str(port), "--data-dir",
                                str(data_dir), "--workers", "1"], cwd=tmp_path, env=env, stdout=log,
                               stderr=subprocess.STDOUT, start_new_session=True)
    served = Served(process, f"http://127.0.0.1:{port}", data_dir.resolve(), token)
    started.append(served)  # cleaned up whatever happens next
    wait_for(lambda: process.poll() is None and httpx.get(f"{served.url}/readyz", timeout=2).status_code == 200,
             120, "pagemill serve")
    # serve, the embedded Redis, the worker and its pool process, the webhook worker, the reconciler
    wait_for(lambda: len(ours(served)) >= 6, 60, "the components of pagemill serve")
    return served


def upload_status(served: Served) -> int:
    key = (served.data_dir / "api_key").read_text().strip()
    response = httpx.post(f"{served.url}/v1/documents", headers={"Authorization": f"Bearer {key}"},
                          files={"file": ("one.pdf", text_page(1), "application/pdf")}, timeout=60)
    return response.status_code


def assert_nothing_left(served: Served) -> None:
    deadline = time.monotonic() + GONE_WITHIN_S
    while time.monotonic() < deadline and ours(served):
        time.sleep(0.25)
    left = ours(served)
    assert not left, f"left running after serve ended: {describe(left)}"


@pytest.fixture
def cleanup() -> Iterator[list[Served]]:
    started: list[Served] = []
    yield started
    for served in started:  # whatever a failed assertion left: never leak into the next test
        for process in ours(served):
            with contextlib.suppress(psutil.Error):
                process.kill()


def stop(served: Served, how: str) -> int:
    if how == "SIGTERM to the process group":
        os.killpg(served.process.pid, signal.SIGTERM)
    elif how == "SIGKILL":
        served.process.kill()
    else:
        served.process.send_signal(getattr(signal, how))
    return served.process.wait(60)


def test_serve_leaves_no_process_however_it_ends_and_starts_again_at_once(tmp_path: Path,
                                                                         cleanup: list[Served]) -> None:
    """One chain, so that each start is also "the next start right after": same port, same data directory."""
    port, data_dir = free_port(), tmp_path / "data"
    for how in ("SIGTERM to the process group", "SIGKILL", "SIGHUP", "SIGTERM", "SIGINT"):
        served = start(tmp_path, port, data_dir, cleanup)
        assert upload_status(served) == 202, f"upload after a start that followed {how}"
        code = stop(served, how)
        assert code == (-signal.SIGKILL if how == "SIGKILL" else 0), f"exit code after {how}"
        assert_nothing_left(served)


def test_serve_exits_non_zero_when_a_component_dies(tmp_path: Path, cleanup: list[Served]) -> None:
    served = start(tmp_path, free_port(), tmp_path / "data", cleanup)
    reconciler = next(p for p in ours(served) if "reconcile" in p.cmdline())
    reconciler.kill()
    assert served.process.wait(60) == 1
    assert_nothing_left(served)


def test_serve_metrics_show_the_gateways_own_series(tmp_path: Path, cleanup: list[Served]) -> None:
    """The dashboards read the gateway's series from `/metrics`, which under `serve` reads the multiprocess
    directory: the gateway's own counters must be written there, like the workers' are."""
    served = start(tmp_path, free_port(), tmp_path / "data", cleanup, PAGEMILL_LIMITS__REQUESTS_PER_MINUTE="1")
    key = (served.data_dir / "api_key").read_text().strip()
    with httpx.Client(base_url=served.url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as client:
        assert client.get("/v1/tenant").status_code == 200
        one = ("one.pdf", text_page(1), "application/pdf")
        # one submission a minute: the first (refused for its unknown field) is counted, the second is over
        assert client.post("/v1/documents", files={"file": one}, data={"furniture": "bogus"}).status_code == 422
        assert client.post("/v1/documents", files={"file": one}).status_code == 429
        exposition = client.get("/metrics").text
    samples = {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in exposition.splitlines()
               if line and not line.startswith("#")}

    def value(name: str, **labels: str) -> float:
        found = [v for sample, v in samples.items() if sample.split("{")[0] == name
                 and all(f'{k}="{v}"' in sample for k, v in labels.items())]
        assert found, f"{name}{labels} is not on /metrics under pagemill serve"
        return sum(found)

    assert value("pagemill_http_requests_total", route="/v1/tenant", method="GET", status="200") == 1
    assert value("pagemill_http_request_duration_seconds_count", route="/v1/documents", method="POST") == 2
    assert value("pagemill_uploads_rejected_total", code="validation_error") == 1
    assert value("pagemill_rate_limited_total", limit="requests_per_minute") == 1
    stop(served, "SIGTERM")
