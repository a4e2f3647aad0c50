"""`make bench-events` (part of `make bench`): what open event streams cost one gateway, at 10, 100 and 1,000.

One gateway process on PostgreSQL and Redis; N clients hold `GET /v1/documents/{id}/events` open on running
documents (spread over `--documents` of them). The documents progress at a fixed pace whatever N is: this
process ends their pages itself, `--pages-per-s` a second, through the worker's own `finish_page` in an outbox
(so each end commits, then publishes its notice, exactly as a worker's does), with no engine and no worker
process taking the CPU. Measured over a window at each N: the gateway process's CPU seconds per second, and
the statements it ran on PostgreSQL per second (pg_stat_statements, counted for the gateway's own database
role, so this process's statements are not among them), beside the events the clients received.

With `--baseline PATH` the same is measured for a gateway run from another checkout (the polling gateway
before this change, say), for comparison.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform as host
import resource
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import sqlalchemy as sa

from pagemill_eval.sections import write_section
from services.core.db.models import PageStatus
from services.core.db.session import _normalize_url, migrate, session_scope
from services.core.lifecycle import PageFinish, finish_page
from services.core.queues import make_celery, outbox
from services.core.settings import Settings
from tests.harness import CORPUS, REPO, Platform
from tests.pdfs import repeat_pages
from tests.servers import PostgresCluster, _postgres_bin, fresh_database, start_redis

GATEWAY_ROLE = "pagemill_gateway"
SECTION = "bench-events"


@dataclass
class Listeners:
    """Raw-socket SSE clients: cheap enough that 1,000 of them leave the CPU to the gateway."""

    port: int
    key: str
    streams: list[asyncio.Task[None]] = field(default_factory=list)
    opened: int = 0
    events: int = 0
    failed: int = 0

    async def open(self, document_id: str) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        writer.write(f"GET /v1/documents/{document_id}/events HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     f"Authorization: Bearer {self.key}\r\nAccept: text/event-stream\r\n\r\n".encode())
        await writer.drain()
        status = await reader.readline()
        if b" 200 " not in status:
            self.failed += 1
            writer.close()
            return
        self.opened += 1
        try:
            while chunk := await reader.read(65536):
                self.events += chunk.count(b"\nevent: ") + chunk.startswith(b"event: ")
        finally:
            writer.close()

    def add(self, document_ids: list[str]) -> None:
        for document_id in document_ids:
            self.streams.append(asyncio.get_running_loop().create_task(self.open(document_id)))

    async def close(self) -> None:
        for task in self.streams:
            task.cancel()
        await asyncio.gather(*self.streams, return_exceptions=True)


class PageEnder(threading.Thread):
    """Ends one pending page every 1/`rate` s, round robin over the documents, as a worker would; `pause()`
    holds it (the documents stay running, nothing changes)."""

    def __init__(self, database_url: str, redis_url: str, documents: list[str], pages: int, rate: float) -> None:
        super().__init__(daemon=True)
        self.database_url, self.documents, self.pages, self.rate = database_url, documents, pages, rate
        self.app = make_celery(Settings(database_url=database_url, redis_url=redis_url))
        self.ended = 0
        self.stopping = threading.Event()
        self.going = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            self.going.wait()
            started, ended = time.monotonic(), self.ended
            while self.going.is_set() and not self.stopping.is_set():
                document_id = self.documents[self.ended % len(self.documents)]
                index = self.ended // len(self.documents)
                if index >= self.pages - 1:  # the last page stays open: the documents keep running
                    return
                with outbox(self.app), session_scope(self.database_url) as session:
                    finish_page(session, document_id, index, PageFinish(PageStatus.SUCCEEDED, engine="fake"))
                self.ended += 1
                self.stopping.wait(max(0.0, started + (self.ended - ended) / self.rate - time.monotonic()))


def gateway_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def gateway_statements(admin: sa.Engine) -> int:
    with admin.connect() as connection:
        return int(connection.execute(sa.text(
            "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE userid = CAST(:role AS regrole)"),
            {"role": GATEWAY_ROLE}).scalar_one())


@dataclass(frozen=True)
class Level:
    listeners: int
    pages_ending: bool
    cpu_per_s: float
    statements_per_s: float
    events_per_s: float
    pages_per_s: float


async def measure(platform: Platform, admin: sa.Engine, documents: list[str], ender: PageEnder,
                  levels: list[int], window_s: float, settle_s: float) -> list[Level]:
    assert platform.api_key
    clients = Listeners(platform.port, platform.api_key)
    pid = platform.processes["gateway"].pid
    results = []
    try:
        for level in levels:
            wanted = level - len(clients.streams)
            for start in range(0, wanted, 100):  # opened in batches, as clients arriving over a few seconds
                batch = min(100, wanted - start)
                clients.add([documents[(len(clients.streams) + i) % len(documents)] for i in range(batch)])
                await asyncio.sleep(0.5)
            deadline = time.monotonic() + 120
            while clients.opened + clients.failed < level and time.monotonic() < deadline:
                await asyncio.sleep(0.2)
            assert clients.failed == 0 and clients.opened == level, (clients.opened, clients.failed)
            for pages_ending in (False, True):
                (ender.going.set if pages_ending else ender.going.clear)()
                await asyncio.sleep(settle_s)  # the streams' first reads are done: what follows is steady
                cpu, statements = gateway_cpu_s(pid), gateway_statements(admin)
                events, ended = clients.events, ender.ended
                await asyncio.sleep(window_s)
                results.append(Level(level, pages_ending, (gateway_cpu_s(pid) - cpu) / window_s,
                                     (gateway_statements(admin) - statements) / window_s,
                                     (clients.events - events) / window_s, (ender.ended - ended) / window_s))
                print(results[-1], flush=True)
    finally:
        await clients.close()
    return results


@dataclass
class CheckoutPlatform(Platform):
    """The platform's processes run from another checkout (`python -m` puts the working directory first)."""

    source: Path = REPO

    def _spawn(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        log = (self.workdir / "logs" / f"{name}.log").open("ab")
        env = {**self.env, "PYTHONPATH": str(self.source), "PYTHONDONTWRITEBYTECODE": "1"}
        process = subprocess.Popen([sys.executable, "-m", "services.cli", *args], env=env, cwd=self.source,
                                   stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.processes[name] = process
        return process


def run_gateway(workdir: Path, label: str, admin_url: str, gateway_url: str, redis_url: str, source: Path,
                args: argparse.Namespace) -> list[Level]:
    platform = CheckoutPlatform(workdir=workdir / label, database_url=gateway_url, redis_base_url=redis_url,
                                engine="fake", extra_env={"PAGEMILL_LOG_LEVEL": "WARNING"}, source=source)
    try:
        platform.start(worker=False)
        pdf = workdir / f"{args.pages}.pdf"
        pdf.write_bytes(repeat_pages(CORPUS / "dev" / "docling_multi_page" / "multi_page.pdf", args.pages))
        documents = [str(platform.upload(pdf, cache="false")["id"]) for _ in range(args.documents)]
        ender = PageEnder(admin_url, platform.redis_url, documents, args.pages, args.pages_per_s)
        ender.start()
        admin = sa.create_engine(_normalize_url(admin_url))
        levels = [int(n) for n in args.listeners.split(",")]
        if label == "baseline":
            levels = [n for n in levels if n <= args.baseline_max]
        try:
            return asyncio.run(measure(platform, admin, documents, ender, levels, args.window, args.settle))
        finally:
            ender.stopping.set()
            ender.join(10)
            admin.dispose()
    finally:
        platform.stop(graceful=False)


def start_database(workdir: Path) -> tuple[PostgresCluster, str, str]:
    """A throwaway cluster with pg_stat_statements, a database migrated by the superuser, and the gateway's
    own role (a superuser too, so no grants are needed), whose statements are the ones counted."""
    bindir = _postgres_bin()
    if bindir is None:
        raise SystemExit("bench.event_streams needs the machine's PostgreSQL server (Debian: postgresql)")
    cluster = PostgresCluster(bindir)
    cluster.durability += " -c shared_preload_libraries=pg_stat_statements -c max_connections=300"
    cluster.stop()
    cluster.start()
    admin_url, _ = fresh_database(cluster.url)
    migrate(admin_url)
    engine = sa.create_engine(_normalize_url(admin_url), isolation_level="AUTOCOMMIT")
    with engine.connect() as connection:
        connection.execute(sa.text("CREATE EXTENSION IF NOT EXISTS pg_stat_statements"))
        connection.execute(sa.text(f"CREATE ROLE {GATEWAY_ROLE} LOGIN SUPERUSER"))
    engine.dispose()
    gateway_url = sa.engine.make_url(admin_url).set(username=GATEWAY_ROLE).render_as_string(hide_password=False)
    return cluster, admin_url, gateway_url


def table(results: dict[str, list[Level]]) -> list[str]:
    lines = ["| gateway | listeners | pages ended/s | gateway CPU (s/s) | DB statements/s | events received/s |",
             "|---|---|---|---|---|---|"]
    for label, levels in results.items():
        for level in levels:
            lines.append(f"| {label} | {level.listeners:,} | {level.pages_per_s:.1f} | {level.cpu_per_s:.3f} | "
                         f"{level.statements_per_s:.1f} | {level.events_per_s:.1f} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--listeners", default="10,100,1000", help="comma-separated stream counts, ascending")
    parser.add_argument("--documents", type=int, default=10, help="running documents the streams are spread over")
    parser.add_argument("--pages", type=int, default=400)
    parser.add_argument("--pages-per-s", type=float, default=4.0)
    parser.add_argument("--window", type=float, default=15.0, help="seconds measured at each level")
    parser.add_argument("--settle", type=float, default=3.0)
    parser.add_argument("--baseline", type=Path, default=None, help="also measure a gateway run from this checkout")
    parser.add_argument("--baseline-max", type=int, default=100, help="the most listeners the baseline gets")
    parser.add_argument("--write", type=Path, default=None)
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 8192)), hard))  # 1,000 sockets on each side
    results: dict[str, list[Level]] = {}
    with tempfile.TemporaryDirectory(prefix="pagemill-bench-events-") as tmp:
        workdir = Path(tmp)
        redis_url, stop_redis = start_redis(workdir)
        cluster, admin_url, gateway_url = start_database(workdir)
        try:
            sources = {"pushed (this checkout)": REPO}
            if args.baseline:
                sources["baseline"] = args.baseline.resolve()
            for label, source in sources.items():
                results[label] = run_gateway(workdir, "baseline" if label == "baseline" else "pushed", admin_url,
                                             gateway_url, redis_url, source, args)
        finally:
            cluster.remove()
            stop_redis()
    command = (f"make bench-events  # python -m bench.event_streams --listeners {args.listeners} "
               f"--documents {args.documents} --pages-per-s {args.pages_per_s:g} --window {args.window:g}")
    if args.baseline:
        command += f" --baseline {args.baseline} --baseline-max {args.baseline_max}"
    lines = [
        "## Event streams (`make bench-events`, part of `make bench`)", "",
        f"Command: `{command}`  ",
        f"Machine: {os.cpu_count()} cores, {host.machine()}, Python {host.python_version()}; measured "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. One gateway process, PostgreSQL, Redis; the "
        f"streams are spread over {args.documents} running documents. At each level the documents first stand "
        f"still (pages ended/s 0: what listeners cost by themselves), then their pages end {args.pages_per_s:g} a "
        "second in all (ended by the bench through the worker's `finish_page`, each commit followed by its notice; "
        "every listener gets a progress event for each page of its document). Each row is measured over "
        f"{args.window:g} s; the gateway's statements are counted by pg_stat_statements for its own database "
        "role (the bench's page ends are not among them).", "",
        *table(results),
    ]
    if args.baseline:
        commit = subprocess.run(["git", "-C", str(args.baseline), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, check=False).stdout.strip()
        lines += ["", f"Baseline: the gateway run from `{args.baseline}` at commit `{commit or 'unknown'}`, "
                      f"at most {args.baseline_max} listeners."]
    text = "\n".join(lines)
    print(text)
    if args.write:
        write_section(args.write, text, SECTION)


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    main()
