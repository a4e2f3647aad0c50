"""Where a page's milliseconds go in the control plane: py-spy samples of the gateway and the worker during the
end-to-end run of `make bench-control` (fake engine), sorted into the steps of a page's way.

Each process's CPU time per page (psutil; the worker with its pool; not PostgreSQL's server) is split in
proportion to its py-spy samples (`--subprocesses`). A sample belongs to the innermost step whose function is on
its stack; the rest of a process is its framework (uvicorn and Starlette, Celery and kombu). A sample whose thread
waits (a socket read, a select, psycopg waiting for the server) is counted apart and gets no CPU: a loaded machine
keeps such threads runnable, so py-spy sees them. Run: `python -m bench.control_profile --databases sqlite`.
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.control_plane import cpu_seconds, fake_platform, local_servers, wait_all
from pagemill_eval.sections import write_section
from tests.harness import CORPUS, Platform
from tests.pdfs import repeat_pages

# (step, the frame that marks it): a frame is py-spy's "function (file:line)"; matched on "function (file".
STEPS = [
    ("upload: read the request body", "receive_upload (services/gateway/documents/receive.py"),
    ("upload: validate the PDF", "validate_upload (services/gateway/documents/service.py"),
    ("object store: put (the source; page results)", "put (services/core/storage.py"),
    ("upload: rows, commit, chunk jobs", "submit (services/gateway/documents/intake.py"),
    ("upload: other (route, form, answer)", "create_document (services/gateway/documents/router.py"),
    ("status polls (`?wait=`)", "get_document (services/gateway/documents/router.py"),
    ("status polls (`?wait=`)", "_load_visible (services/gateway/documents/router.py"),
    ("status polls (`?wait=`)", "_load_visible_ended (services/gateway/documents/router.py"),
    ("status polls (`?wait=`)", "read_snapshot (services/gateway/documents/feeds.py"),
    ("API key check (every request)", "get_current_tenant (services/gateway/deps.py"),
    ("API key check (every request)", "_checked_key (services/gateway/deps.py"),
    ("split", "split_document (services/worker/split.py"),
    ("claim", "_claim (services/worker/tasks.py"),
    ("fetch the page (PDF copy)", "_fetched (services/worker/tasks.py"),
    ("engine (fake)", "run_page (services/worker/pipeline/page.py"),
    ("store the results", "_store_results (services/worker/page_ends.py"),
    ("finish (rows, counters, progress)", "record (services/worker/page_ends.py"),
    ("cancel check", "document_open (services/worker/page_ends.py"),
    ("page task: other", "parse_page (services/worker/tasks.py"),
    ("lease heartbeat", "services/worker/heartbeat.py"),
    ("assembly", "assemble_document (services/results/assemble.py"),
    ("jobs sent after commit (outbox)", "send_jobs (services/core/queues.py"),
]
# Where no step is on the stack: a request's or a task's own database session, opened and committed around
# the step (FastAPI's session dependency, Celery's task wrapper).
FALLBACK = [("a request's database session (BEGIN, COMMIT)", "session_scope (services/core/db/session.py")]


# Leaf frames of a thread that waits (a socket, Redis, PostgreSQL, the event loop's select): a busy machine keeps
# them runnable, so py-spy samples them, but they spend no CPU of this process. Counted apart, not in the split.
WAITS = ("select (selectors.py", "poll (kombu/utils/eventio.py", "_read_from_socket (redis/", "recv (",
         "wait (threading.py", "_recv (billiard/connection.py", "Connection.wait (psycopg/connection.py")
WAITING = "waiting (socket reads, select: no CPU)"


def step_of(stack: list[str]) -> str | None:
    """The innermost step on a stack (root first), None when the sample is the framework's own."""
    if stack and any(marker in stack[-1] for marker in WAITS):
        return WAITING
    for steps in (STEPS, FALLBACK):
        for frame in reversed(stack):
            for step, marker in steps:
                if marker in frame:
                    return step
    return None


def read_samples(path: Path) -> collections.Counter[str]:
    """py-spy's raw (folded) output: `frame;frame;... count` per distinct stack."""
    steps: collections.Counter[str] = collections.Counter()
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        # py-spy starts a stack with the process (and thread) when it samples subprocesses
        frames = [frame for frame in stack.split(";") if not frame.startswith(("process ", "thread "))]
        steps[step_of(frames) or "framework"] += int(count)
    return steps


def profile_run(platform: Platform, workdir: Path, documents: int, pages: int, rate: int,
                uploaders: int = 4) -> dict[str, object]:
    source = workdir / f"profile-{pages}.pdf"
    source.write_bytes(repeat_pages(CORPUS / "dev" / "docling_multi_page" / "multi_page.pdf", pages))
    platform.start(concurrency=2)
    platform.wait_done(platform.upload(source, cache="false")["id"])  # warm: imports, connections, tokenizer
    pids = {"gateway": platform.processes["gateway"].pid, "worker": platform.processes["worker"].pid}
    body = source.read_bytes()
    spies = {name: subprocess.Popen([str(Path(sys.executable).parent / "py-spy"), "record", "--pid", str(pid),
                                     "--subprocesses", "--nonblocking", "--rate", str(rate), "--format", "raw",
                                     "--output", str(workdir / f"{name}.folded")],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for name, pid in pids.items()}
    time.sleep(1.0)  # py-spy attaches within a few hundred ms; samples before the uploads are idle, not counted
    cpu_before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    with platform.client(timeout=120) as shared:

        def upload(_: int) -> str:
            response = shared.post("/v1/documents", files={"file": (source.name, body)}, data={"cache": "false"})
            assert response.status_code == 202, response.text
            return str(response.json()["id"])

        started = time.perf_counter()
        with ThreadPoolExecutor(uploaders) as pool:
            ids = list(pool.map(upload, range(documents)))
        wait_all(platform, ids)
        seconds = time.perf_counter() - started
    cpu_after = {name: cpu_seconds(pid) for name, pid in pids.items()}
    for spy in spies.values():
        spy.send_signal(signal.SIGINT)
        spy.wait(60)
    total = documents * pages
    cpu_ms = {name: 1000 * (cpu_after[name] - cpu_before[name]) / total for name in cpu_after}
    samples = {name: read_samples(workdir / f"{name}.folded") for name in pids}
    return {"pages": total, "seconds": seconds, "cpu_ms": cpu_ms, "samples": samples}


def table(label: str, run: dict[str, object]) -> list[str]:
    cpu_ms: dict[str, float] = run["cpu_ms"]  # type: ignore[assignment]
    samples: dict[str, collections.Counter[str]] = run["samples"]  # type: ignore[assignment]
    lines = [f"**{label}**: {run['pages']} pages in {run['seconds']:.1f} s "
             f"({run['pages'] / run['seconds']:.0f} pages/s end to end, under py-spy)", "",  # type: ignore[operator]
             "| process | step | share of its samples | CPU ms per page |", "|---|---|---|---|"]
    for name in ("gateway", "worker"):
        counts = samples[name]
        total = sum(counts.values()) or 1
        working = (total - counts[WAITING]) or 1
        for step, count in counts.most_common():
            ms = "" if step == WAITING else f"{cpu_ms[name] * count / working:.3f}"
            lines.append(f"| {name} | {step} | {100 * count / total:.1f} % | {ms} |")
        lines.append(f"| {name} | **all** | 100 % | **{cpu_ms[name]:.3f}** |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--documents", type=int, default=100)
    parser.add_argument("--pages", type=int, default=25)
    parser.add_argument("--rate", type=int, default=250, help="py-spy samples per second")
    parser.add_argument("--databases", default="postgresql,sqlite")
    parser.add_argument("--write", type=Path, default=None, help="update this Markdown file's profile section")
    parser.add_argument("--keep", type=Path, default=None, help="copy py-spy's folded stacks into this folder")
    args = parser.parse_args()
    sections = []
    with tempfile.TemporaryDirectory(prefix="pagemill-profile-") as tmp:
        workdir = Path(tmp)
        with local_servers(workdir) as (redis_url, pg_server):
            for label in args.databases.split(","):
                with fake_platform(label, workdir, redis_url, pg_server) as platform:
                    run = profile_run(platform, workdir / label, args.documents, args.pages, args.rate)
                sections += table(label, run) + [""]
                if args.keep:
                    args.keep.mkdir(parents=True, exist_ok=True)
                    for name in ("gateway", "worker"):
                        shutil.copy(workdir / label / f"{name}.folded", args.keep / f"{label}-{name}.folded")
    text = "\n".join([
        "### Where a page's milliseconds go (`python -m bench.control_profile`)", "",
        f"Command: `python -m bench.control_profile --documents {args.documents} --pages {args.pages} "
        f"--rate {args.rate}`; measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} "
        f"cores, 1-minute load average {os.getloadavg()[0]:.1f}. The end-to-end run of `make bench-control` "
        "(fake engine, 4 uploaders), py-spy sampling the gateway and the worker with its pool.", "",
        *sections])
    print(text)
    if args.write:
        write_section(args.write, text, "control-profile")


if __name__ == "__main__":
    main()
