"""`make soak`: `pagemill serve` on loopback under locust, several tenants uploading for a bounded time.

It measures upload latency (p50/p99), pages per second, errors, and the resident memory of every process of
`serve` (gateway, workers and their pool children, the reconciler, the embedded Redis) sampled all along, then
writes the figures into docs/reliability.md (section `soak`). The fake engine stands in for the model, so the
run measures the platform itself: queueing, the database, storage, the gateway.

    python -m bench.soak --minutes 10 --users 12 --tenants 4 --write docs/reliability.md
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import platform as machine
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import psutil

from pagemill_eval.sections import write_section

REPO = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("PAGEMILL_CORPUS", REPO.parent / "shared" / "corpus"))
PDF = CORPUS / "dev" / "docling_multi_page" / "multi_page.pdf"  # 5 digital pages


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def role(process: psutil.Process, serve_pid: int) -> str:
    command = " ".join(process.cmdline())
    if process.pid == serve_pid:
        return "gateway (serve)"
    if "redis-server" in command:
        return "redis (embedded)"
    if "reconcile" in command:
        return "reconciler"
    if "webhooks@local" in command:
        return "webhook worker"
    if "worker" in command:
        return "page worker (main)" if process.ppid() == serve_pid else "page worker (pool child)"
    return process.name()


class RssSampler(threading.Thread):
    def __init__(self, serve_pid: int, every_s: float) -> None:
        super().__init__(daemon=True)
        self.serve_pid, self.every_s = serve_pid, every_s
        self.samples: list[tuple[float, str, int, float]] = []  # (s since start, role, pid, MiB)
        self.stop = threading.Event()
        self.started = time.monotonic()

    def run(self) -> None:
        root = psutil.Process(self.serve_pid)
        while not self.stop.is_set():
            try:
                for process in [root, *root.children(recursive=True)]:
                    try:
                        self.samples.append((time.monotonic() - self.started, role(process, self.serve_pid),
                                             process.pid, process.memory_info().rss / 2**20))
                    except psutil.NoSuchProcess:
                        continue
            except psutil.NoSuchProcess:
                return
            self.stop.wait(self.every_s)

    def summary(self, warm_s: float) -> dict[str, dict[str, float]]:
        """Per role: the sum over its processes at the first sample after warm-up, at the end, and the peak."""
        by_time: dict[str, dict[float, float]] = defaultdict(lambda: defaultdict(float))
        pids: dict[str, set[int]] = defaultdict(set)
        for at, name, pid, mib in self.samples:
            by_time[name][round(at / self.every_s)] += mib
            pids[name].add(pid)
        result = {}
        for name, series in by_time.items():
            ticks = sorted(series)
            warm = [t for t in ticks if t * self.every_s >= warm_s] or ticks
            result[name] = {"start_mib": round(series[warm[0]], 1), "end_mib": round(series[ticks[-1]], 1),
                            "peak_mib": round(max(series.values()), 1), "processes": len(pids[name])}
        return result


def start_serve(workdir: Path, port: int, admin_key: str, workers: int) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAGEMILL_")}
    env.update({"PAGEMILL_ENGINE__KIND": "fake", "PAGEMILL_ENGINE__FAKE_LATENCY_MS": "20",
                "PAGEMILL_ADMIN_KEY": admin_key, "PAGEMILL_LIMITS__REQUESTS_PER_MINUTE": "100000",
                "PAGEMILL_LIMITS__PAGES_IN_FLIGHT": "1000000", "PAGEMILL_LOG_LEVEL": "WARNING",
                "PYTHONPATH": str(REPO)})
    log = (workdir / "serve.log").open("ab")
    return subprocess.Popen([sys.executable, "-m", "services.cli", "serve", "--port", str(port), "--data-dir",
                             str(workdir / "data"), "--workers", str(workers)], cwd=REPO, env=env, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)


def stop_serve(process: subprocess.Popen[bytes], workdir: Path) -> None:
    tree = []
    with contextlib.suppress(psutil.NoSuchProcess):
        tree = [process.pid, *(p.pid for p in psutil.Process(process.pid).children(recursive=True))]
    process.send_signal(signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(30)
    # Whatever outlived serve: its own children, and the embedded Redis (daemonized, it runs in the data folder).
    for candidate in psutil.process_iter(["cwd"]):
        cwd = candidate.info.get("cwd") or ""
        if cwd.startswith(str(workdir)) and candidate.pid not in tree:
            tree.append(candidate.pid)
    for pid in tree:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            continue


def pages_done(data_dir: Path, since: datetime) -> tuple[int, int, float, int]:
    """(pages succeeded, pages failed, seconds from the first start to the last finish, pages still open)."""
    import sqlalchemy as sa

    engine = sa.create_engine(f"sqlite:///{data_dir / 'pagemill.db'}")
    with engine.connect() as connection:
        row = connection.execute(sa.text(
            "SELECT sum(status = 'succeeded'), sum(status = 'failed'), min(started_at), max(finished_at) "
            "FROM pages WHERE started_at >= :since"), {"since": since.isoformat(sep=" ")}).one()
        still_open = connection.execute(sa.text(
            "SELECT count(*) FROM pages WHERE status IN ('pending', 'queued', 'running')")).scalar_one()
    engine.dispose()
    span = 0.0
    if row[2] and row[3]:
        span = (datetime.fromisoformat(str(row[3])) - datetime.fromisoformat(str(row[2]))).total_seconds()
    return int(row[0] or 0), int(row[1] or 0), span, int(still_open)


def run(minutes: float, users: int, tenants: int, workers: int) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="pagemill-soak-"))
    port, admin_key = free_port(), f"admin-{uuid.uuid4().hex}"
    url = f"http://127.0.0.1:{port}"
    serve = start_serve(workdir, port, admin_key, workers)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or serve.poll() is not None:
                raise RuntimeError(f"pagemill serve did not come up: {(workdir / 'serve.log').read_text()[-2000:]}")
            time.sleep(0.5)
        keys = []
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {admin_key}"}, timeout=30) as admin:
            for number in range(tenants):
                tenant = admin.post("/v1/admin/tenants", json={"name": f"soak-{number}"}).json()
                keys.append(admin.post(f"/v1/admin/tenants/{tenant['id']}/keys", json={"name": "soak"}).json()["key"])
        (workdir / "keys.json").write_text(json.dumps(keys))
        sampler = RssSampler(serve.pid, every_s=5.0)
        sampler.start()
        started = datetime.now(UTC)
        env = {**os.environ, "PAGEMILL_SOAK_KEYS": str(workdir / "keys.json"), "PAGEMILL_SOAK_PDF": str(PDF)}
        seconds = max(10, int(minutes * 60))
        subprocess.run([sys.executable, "-m", "locust", "-f", str(REPO / "bench" / "locustfile.py"), "--headless",
                        "-u", str(users), "-r", str(users), "-t", f"{seconds}s", "--host", url, "--csv",
                        str(workdir / "locust"), "--only-summary", "--loglevel", "WARNING"],
                       env=env, check=False, cwd=REPO, stdout=subprocess.DEVNULL)
        time.sleep(20)  # let the backlog drain a little: pages/s counts what finished
        sampler.stop.set()
        succeeded, failed, span, still_open = pages_done(workdir / "data", started)
        stats = {row["Name"]: row for row in csv.DictReader((workdir / "locust_stats.csv").open())}
        upload = stats["POST /v1/documents"]
        return {
            "measured_at": started.strftime("%Y-%m-%d %H:%M UTC"), "minutes": minutes, "users": users,
            "tenants": tenants, "workers": workers, "cores": os.cpu_count(), "python": machine.python_version(),
            "uploads": int(upload["Request Count"]), "upload_errors": int(upload["Failure Count"]),
            "upload_p50_ms": float(upload["50%"]), "upload_p99_ms": float(upload["99%"]),
            "status_polls": int(stats.get("GET /v1/documents/{id}", {}).get("Request Count", 0) or 0),
            "errors": int(stats["Aggregated"]["Failure Count"]),
            "pages_succeeded": succeeded, "pages_failed": failed, "pages_open_at_end": still_open,
            "pages_per_s": round(succeeded / span, 2) if span else 0.0,
            "rss": sampler.summary(warm_s=min(60.0, seconds / 5)),
        }
    finally:
        stop_serve(serve, workdir)


def markdown(figures: dict[str, Any]) -> str:
    lines = [
        f"Measured {figures['measured_at']}: `make soak` ({figures['minutes']} min, {figures['users']} locust users "
        f"over {figures['tenants']} tenants, `pagemill serve` with {figures['workers']} page workers, fake engine "
        f"at 20 ms a page, {figures['cores']} cores shared with other work, Python {figures['python']}).",
        "",
        "| uploads | upload errors | upload p50 (ms) | upload p99 (ms) | status polls | pages parsed | pages "
        "failed | pages/s | pages still queued 20 s after the load |",
        "|---|---|---|---|---|---|---|---|---|",
        f"| {figures['uploads']} | {figures['upload_errors']} | {figures['upload_p50_ms']:.0f} | "
        f"{figures['upload_p99_ms']:.0f} | {figures['status_polls']} | {figures['pages_succeeded']} | "
        f"{figures['pages_failed']} | {figures['pages_per_s']} | {figures['pages_open_at_end']} |",
        "",
        "| process | processes seen | RSS after warm-up (MiB) | RSS at the end (MiB) | peak (MiB) |",
        "|---|---|---|---|---|",
    ]
    for name, row in sorted(figures["rss"].items()):
        lines.append(f"| {name} | {row['processes']} | {row['start_mib']} | {row['end_mib']} | {row['peak_mib']} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--users", type=int, default=12)
    parser.add_argument("--tenants", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", type=Path, help="also write the figures as JSON")
    parser.add_argument("--write", type=Path, help="replace the `soak` section of this Markdown file")
    args = parser.parse_args()
    figures = run(args.minutes, args.users, args.tenants, args.workers)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    text = markdown(figures)
    if args.write:
        write_section(args.write, text, "soak")
    print(text)


if __name__ == "__main__":
    main()
