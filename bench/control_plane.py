"""`make bench`: the control plane's per-page overhead, beside raw Celery on the same Redis, in one run.

pagemill runs the `fake` engine (instant pages), so what is measured is everything around the engine:
upload, split, page tasks, database updates, object store, assembly. Two raw baselines, Celery no-op tasks
consumed by a worker of the same pool and concurrency: published while the worker consumes, one message
prefetched per process (as pagemill's workers take theirs); and the stronger one of issue 27, a queue filled
beforehand and consumed with `worker_prefetch_multiplier=8`. Also measured: the upload latency of a 500-page PDF.
"""

from __future__ import annotations

import argparse
import os
import platform as host
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import psutil
import redis

from pagemill_eval.sections import write_section
from tests.harness import CORPUS, REPO, Platform
from tests.pdfs import repeat_pages
from tests.servers import fresh_database, start_postgres, start_redis

RAW_APP = '''
import os, redis
from celery import Celery
app = Celery("raw", broker=os.environ["RAW_BROKER"])
app.conf.update(task_acks_late=True, worker_prefetch_multiplier=int(os.environ.get("RAW_PREFETCH", "1")),
                task_ignore_result=True,
                worker_hijack_root_logger=False)
counter = redis.Redis.from_url(os.environ["RAW_BROKER"])
@app.task(name="raw.noop")
def noop():
    counter.incr("raw:done")
'''


def cpu_seconds(pid: int) -> float:
    """CPU time so far of a process and its children (a Celery worker and its pool)."""
    total = 0.0
    root = psutil.Process(pid)
    for process in [root, *root.children(recursive=True)]:
        try:
            times = process.cpu_times()
        except psutil.Error:  # a pool process that just ended
            continue
        total += times.user + times.system
    return total


def raw_worker(redis_url: str, concurrency: int, workdir: Path, prefetch: int) -> subprocess.Popen[bytes]:
    """A Celery worker of the raw app (the app written to `workdir` and importable from here)."""
    (workdir / "rawapp.py").write_text(RAW_APP)
    sys.path.insert(0, str(workdir))
    os.environ["RAW_BROKER"] = redis_url
    env = {**os.environ, "RAW_BROKER": redis_url, "RAW_PREFETCH": str(prefetch), "PYTHONPATH": str(workdir)}
    return subprocess.Popen([sys.executable, "-m", "celery", "-A", "rawapp", "worker", "-c", str(concurrency),
                             "--pool", "prefork", "-l", "WARNING", "--without-gossip", "--without-mingle",
                             "--without-heartbeat"], env=env, cwd=workdir, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def raw_celery_prefilled(redis_url: str, tasks: int, concurrency: int, workdir: Path,
                         prefetch: int = 8) -> dict[str, float]:
    """Issue 27's stronger baseline: the queue is filled before the worker starts, and each pool process may
    hold `prefetch` messages. The clock starts at the first task done, as pagemill's draining clock does at
    its first document taken: Celery's boot is not counted."""
    client = redis.Redis.from_url(redis_url)
    client.delete("raw:done")
    (workdir / "rawapp.py").write_text(RAW_APP)
    sys.path.insert(0, str(workdir))
    os.environ["RAW_BROKER"] = redis_url
    import rawapp  # type: ignore[import-not-found]

    started = time.perf_counter()
    with rawapp.app.producer_or_acquire() as producer:
        for _ in range(tasks):
            rawapp.noop.apply_async(producer=producer)
    published = time.perf_counter() - started
    worker = raw_worker(redis_url, concurrency, workdir, prefetch)
    try:
        while (first := int(client.get("raw:done") or 0)) < 1:
            time.sleep(0.001)
        cpu_before = cpu_seconds(worker.pid)
        started = time.perf_counter()
        while int(client.get("raw:done") or 0) < tasks:
            time.sleep(0.01)
        consumed = time.perf_counter() - started
        cpu = cpu_seconds(worker.pid) - cpu_before
    finally:
        worker.terminate()
        worker.wait(30)
    return {"tasks": tasks, "prefetch": prefetch, "published_per_s": tasks / published,
            "consumed_per_s": (tasks - first) / consumed, "cpu_ms": 1000 * cpu / (tasks - first)}


def raw_celery(redis_url: str, tasks: int, concurrency: int, workdir: Path) -> dict[str, float]:
    worker = raw_worker(redis_url, concurrency, workdir, prefetch=1)
    try:
        client = redis.Redis.from_url(redis_url)
        client.delete("raw:done")
        import rawapp  # type: ignore[import-not-found]

        rawapp.noop.delay()  # warm up: the worker is consuming before the clock starts
        while int(client.get("raw:done") or 0) < 1:
            time.sleep(0.05)
        client.delete("raw:done")
        cpu_before = cpu_seconds(worker.pid)
        started = time.perf_counter()
        with rawapp.app.producer_or_acquire() as producer:
            for _ in range(tasks):
                rawapp.noop.apply_async(producer=producer)
        published = time.perf_counter() - started
        while int(client.get("raw:done") or 0) < tasks:
            time.sleep(0.01)
        consumed = time.perf_counter() - started
        cpu = cpu_seconds(worker.pid) - cpu_before
    finally:
        worker.terminate()
        worker.wait(30)
    return {"tasks": tasks, "published_per_s": tasks / published, "consumed_per_s": tasks / consumed,
            "cpu_ms": 1000 * cpu / tasks}


def wait_all(platform: Platform, ids: list[str]) -> int:
    """Waits until every document has succeeded; returns the requests that took (`?wait=` answers at each
    change of a document's page counts, so a document still running takes several)."""
    requests = 0
    with platform.client() as client:
        for document_id in ids:
            status = ""
            while status != "succeeded":
                status = client.get(f"/v1/documents/{document_id}", params={"wait": 10}).json()["status"]
                requests += 1
    return requests


def pagemill_run(platform: Platform, documents: int, pages: int, workdir: Path, concurrency: int,
                 uploaders: int = 4) -> dict[str, float]:
    """Two figures: end to end (clients upload in parallel while the workers run), and the workers' own
    rate on a queue filled beforehand — the like-for-like comparison with raw Celery consuming its queue."""
    source = workdir / f"bench-{pages}.pdf"
    source.write_bytes(repeat_pages(CORPUS / "dev" / "docling_multi_page" / "multi_page.pdf", pages))
    platform.start(concurrency=concurrency)
    # cache=false: the same file is uploaded again and again; the result cache would answer it without work.
    warm = platform.upload(source, cache="false")
    platform.wait_done(warm["id"])

    # The uploaders share one HTTP client, as an SDK does: a client made per upload would spend a millisecond of
    # these same cores per page on its TLS context alone (httpx builds one even for http://).
    body = source.read_bytes()
    with platform.client(timeout=120) as shared:

        def upload(_: int) -> str:
            response = shared.post("/v1/documents", files={"file": (source.name, body)}, data={"cache": "false"})
            assert response.status_code == 202, response.text
            return str(response.json()["id"])

        started = time.perf_counter()
        with ThreadPoolExecutor(uploaders) as pool:
            ids = list(pool.map(upload, range(documents)))
        uploaded = time.perf_counter() - started
        wait_requests = wait_all(platform, ids)
        end_to_end = time.perf_counter() - started

        platform.kill("worker", signal.SIGTERM)
        with ThreadPoolExecutor(uploaders) as pool:
            ids = list(pool.map(upload, range(documents)))
    drain_worker = platform.start_worker("worker-drain", concurrency=concurrency)
    # The clock starts when the worker has booted and taken its first job (the first document leaves
    # `queued`), so Celery's start-up is not counted against pagemill.
    with platform.client() as client:
        while client.get(f"/v1/documents/{ids[0]}").json()["status"] == "queued":
            time.sleep(0.005)
    cpu_before = cpu_seconds(drain_worker.pid)
    started = time.perf_counter()
    wait_all(platform, ids)
    drained = time.perf_counter() - started
    drain_cpu_ms = 1000 * (cpu_seconds(drain_worker.pid) - cpu_before) / (documents * pages)
    return {"drain_cpu_ms": drain_cpu_ms, "wait_requests": wait_requests,
            "documents": documents, "pages": documents * pages, "seconds": end_to_end, "upload_seconds": uploaded,
            "pages_per_s": documents * pages / end_to_end, "drain_pages_per_s": documents * pages / drained}


def upload_latency(platform: Platform, workdir: Path, pages: int = 500, repeats: int = 5) -> dict[str, float]:
    source = workdir / f"upload-{pages}.pdf"
    source.write_bytes(repeat_pages(CORPUS / "dev" / "docling_multi_page" / "multi_page.pdf", pages))
    times = []
    with platform.client(timeout=120) as client:
        for _ in range(repeats):
            started = time.perf_counter()
            response = client.post("/v1/documents", files={"file": (source.name, source.read_bytes())},
                                   data={"cache": "false"})
            times.append(time.perf_counter() - started)
            assert response.status_code == 202, response.text
            client.delete(f"/v1/documents/{response.json()['id']}")
    return {"pages": pages, "bytes": source.stat().st_size, "median_s": statistics.median(times),
            "max_s": max(times)}





@contextmanager
def local_servers(workdir: Path) -> Iterator[tuple[str, str]]:
    """A Redis and a PostgreSQL server of the bench's own: (redis url, PostgreSQL server url)."""
    redis_url, stop_redis = start_redis(workdir)
    try:
        pg_server, stop_pg = start_postgres(workdir)
        try:
            yield redis_url, pg_server
        finally:
            stop_pg()
    finally:
        stop_redis()


@contextmanager
def fake_platform(label: str, workdir: Path, redis_url: str, pg_server: str,
                  extra_env: dict[str, str] | None = None) -> Iterator[Platform]:
    """The platform on the fake engine over `label`'s database (postgresql: a fresh database on `pg_server`;
    sqlite: a file in `workdir`), stopped and its database dropped on the way out."""
    if label == "postgresql":
        database_url, drop = fresh_database(pg_server)
    else:
        database_url, drop = f"sqlite:///{workdir / f'{label}.db'}", (lambda: None)
    # the uploads of a run may pass the default 120 a minute: the bench measures throughput, not the rate limit
    platform = Platform(workdir=workdir / label, database_url=database_url, redis_base_url=redis_url,
                        engine="fake", extra_env={"PAGEMILL_LOG_LEVEL": "WARNING",
                                                  "PAGEMILL_LIMITS__REQUESTS_PER_MINUTE": "100000",
                                                  **(extra_env or {})})
    try:
        yield platform
    finally:
        platform.stop()
        drop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    # 100 uploads of 25 pages: 2,500 pages, a few seconds of steady state as in the raw run's 5,000 tasks (with 20,
    # the first upload and the last assembly were a tenth of a one-second run, and runs varied by half)
    parser.add_argument("--documents", type=int, default=100)
    parser.add_argument("--pages", type=int, default=25)
    parser.add_argument("--raw-tasks", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--databases", default="postgresql,sqlite", help="comma-separated: postgresql, sqlite")
    parser.add_argument("--write", type=Path, default=None, help="update this Markdown file's bench section")
    args = parser.parse_args()
    load_at_start, started_at = os.getloadavg()[0], time.strftime("%H:%M", time.gmtime())
    with tempfile.TemporaryDirectory(prefix="pagemill-bench-") as tmp:
        workdir = Path(tmp)
        with local_servers(workdir) as (redis_url, pg_server):
            raw_url = redis_url.rsplit("/", 1)[0] + "/15"
            raw = raw_celery(raw_url, args.raw_tasks, args.concurrency, workdir)
            print(f"raw celery: {raw}", flush=True)

            def prefilled() -> dict[str, float]:
                run = raw_celery_prefilled(raw_url, args.raw_tasks, args.concurrency, workdir)
                print(f"raw celery, pre-filled, prefetch 8: {run}", flush=True)
                return run

            # The stronger baseline before each database's run and after the last: each database is compared
            # with the mean of the two runs around it, as the machine's load moves within a run.
            raw8_runs = [prefilled()]
            results = {}
            for label in args.databases.split(","):
                with fake_platform(label, workdir, redis_url, pg_server) as platform:
                    run = pagemill_run(platform, args.documents, args.pages, workdir, args.concurrency)
                    run["upload_500"] = upload_latency(platform, workdir)  # type: ignore[assignment]
                results[label] = run
                print(f"pagemill ({label}): {run}", flush=True)
                raw8_runs.append(prefilled())
    command = (f"make bench  # python -m bench.control_plane --documents {args.documents} --pages {args.pages} "
               f"--raw-tasks {args.raw_tasks} --concurrency {args.concurrency}")
    lines = [
        "## Control plane (`make bench`)", "",
        f"Command: `{command}`  ",
        f"Machine: {os.cpu_count()} cores, {host.machine()}, Python {host.python_version()}; "
        f"measured {time.strftime('%Y-%m-%d', time.gmtime())} {started_at}-{time.strftime('%H:%M UTC', time.gmtime())}"
        f", 1-minute load average {load_at_start:.1f} at the start and {os.getloadavg()[0]:.1f} at the end. "
        "Fake engine (instant pages); "
        f"Celery prefork, concurrency {args.concurrency}, for pagemill and the raw baseline alike.", "",
        "| run | pages | pages/s | vs raw Celery consumed | vs raw Celery pre-filled, prefetch 8 |",
        "|---|---|---|---|---|",
        f"| raw Celery no-op task (consumed while published, prefetch 1) | {raw['tasks']:.0f} "
        f"| {raw['consumed_per_s']:.0f} | 100 % | |",
        f"| raw Celery no-op task (published) | {raw['tasks']:.0f} | {raw['published_per_s']:.0f} | | |",
    ]

    def ratios(rate: float, raw8_rate: float) -> str:
        return f"{100 * rate / raw['consumed_per_s']:.0f} % | {rate / raw8_rate:.2f}"

    order = ["before"] + [f"after {label}" for label in results]
    for when, raw8 in zip(order, raw8_runs, strict=True):
        lines.append(f"| raw Celery no-op task (a pre-filled queue consumed, prefetch 8), {when} "
                     f"| {raw8['tasks']:.0f} | {raw8['consumed_per_s']:.0f} | | |")
    for position, (label, run) in enumerate(results.items()):
        around = (raw8_runs[position]["consumed_per_s"] + raw8_runs[position + 1]["consumed_per_s"]) / 2
        run["raw8_around"] = around
        lines.append(f"| pagemill, fake engine, {label}: workers draining a filled queue (split, pages, assembly) "
                     f"| {run['pages']:.0f} | {run['drain_pages_per_s']:.0f} "
                     f"| {ratios(run['drain_pages_per_s'], around)} |")
        lines.append(f"| pagemill, fake engine, {label}: end to end, 4 clients uploading while workers run "
                     f"| {run['pages']:.0f} | {run['pages_per_s']:.0f} | {ratios(run['pages_per_s'], around)} |")
    lines += ["", "The stronger baseline (issue 27: the queue filled before its worker starts, prefetch 8) is run "
              "before each database's runs and after the last; each database's ratio is to the mean of the two runs "
              "around it (" + ", ".join(f"{label}: {run['raw8_around']:.0f} tasks/s" for label, run in results.items())
              + ")."]
    lines += ["", "End to end: 4 client threads upload the documents through one shared HTTP client (as an SDK "
              "would; before 2026-12-02 each upload made its own client, whose TLS context cost about 1 ms of the same "
              "two cores per page), then wait for each with `GET /v1/documents/{id}?wait=10` ("
              + ", ".join(f"{label}: {run['wait_requests']:.0f} requests" for label, run in results.items())
              + f" for the {args.documents} documents). The clock runs from the first upload to the last `succeeded`."]
    lines += ["", f"CPU time of the worker (main process and pool) per page while draining, which a machine shared "
              f"with other work distorts less than the rates (1-minute load average at the end: "
              f"{os.getloadavg()[0]:.1f}): raw Celery {raw['cpu_ms']:.2f} ms per task (pre-filled, prefetch 8: "
              + " / ".join(f"{run['cpu_ms']:.2f}" for run in raw8_runs) + " ms); "
              + "; ".join(f"pagemill {label} {run['drain_cpu_ms']:.2f} ms per page "
                          f"({100 * raw['cpu_ms'] / run['drain_cpu_ms']:.0f} % of raw)"
                          for label, run in results.items())
              + "."]
    lines += ["", "Upload latency of a 500-page PDF (validate, store, write 500 page rows, queue their chunk jobs: "
              "a PDF this size needs no split; median of 5):", "",
              "| database | file size | median | max |", "|---|---|---|---|"]
    for label, run in results.items():
        up = run["upload_500"]
        lines.append(f"| {label} | {up['bytes'] / 1e6:.1f} MB | {up['median_s'] * 1000:.0f} ms | "  # type: ignore[index]
                     f"{up['max_s'] * 1000:.0f} ms |")  # type: ignore[index]
    text = "\n".join(lines)
    print(text)
    if args.write:
        write_section(args.write, text, "bench")


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    main()
