"""Fair-share measurement: how long one tenant's 1-page upload takes while another tenant's big upload runs,
with the fair-share priorities on and off (plain FIFO), on real Redis, PostgreSQL and Celery workers.

    python -m bench.fair_share [--pages 2000] [--write docs/fair-share.md]

Starts its own Redis and PostgreSQL unless PAGEMILL_REDIS_URL / PAGEMILL_DATABASE_URL (a PostgreSQL server)
are set. Uses the fake engine with a fixed latency per page, so the numbers are about scheduling, not OCR.
"""

from __future__ import annotations

import argparse
import os
import platform as machine
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from services.core.db.session import migrate
from tests.harness import CORPUS, Platform
from tests.pdfs import repeat_pages
from tests.servers import fresh_database, start_postgres, start_redis

ONE_PAGE = CORPUS / "dev" / "pypdf_crazyones" / "crazyones.pdf"


@dataclass
class Run:
    fair_share: bool
    small_seconds: float
    big_done_when_small_ended: int
    big_pages: int
    big_seconds: float | None


def measure(workdir: Path, database_url: str, redis_url: str, big: Path, pages: int, *, fair_share: bool,
            latency_ms: int, head_start: int) -> Run:
    platform = Platform(workdir=workdir, database_url=database_url, redis_base_url=redis_url, engine="fake",
                        extra_env={"PAGEMILL_ENGINE__FAKE_LATENCY_MS": str(latency_ms),
                                   "PAGEMILL_LIMITS__FAIR_SHARE": str(fair_share).lower()})
    try:
        platform.start(concurrency=2)
        bulk, interactive = platform.create_tenant("bulk"), platform.create_tenant("interactive")
        big_started = time.monotonic()
        big_id = platform.upload(big, key=bulk.key, cache="false")["id"]
        with platform.client(key=bulk.key) as client:
            while client.get(f"/v1/documents/{big_id}").json()["pages_done"] < head_start:
                time.sleep(0.1)
        started = time.monotonic()
        small_id = platform.upload(ONE_PAGE, key=interactive.key, cache="false")["id"]
        platform.wait_done(small_id, key=interactive.key, timeout=3600)
        small_seconds = time.monotonic() - started
        with platform.client(key=bulk.key) as client:
            done = client.get(f"/v1/documents/{big_id}").json()["pages_done"]
        platform.wait_done(big_id, key=bulk.key, timeout=3600)
        return Run(fair_share, small_seconds, done, pages, time.monotonic() - big_started)
    finally:
        platform.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--latency-ms", type=int, default=10)
    parser.add_argument("--head-start", type=int, default=20, help="big pages done before the small upload")
    parser.add_argument("--write", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pagemill-fair-") as tmp:
        root = Path(tmp)
        redis_url = os.environ.get("PAGEMILL_REDIS_URL")
        stop_redis = None
        if not redis_url:
            (root / "redis").mkdir()
            redis_url, stop_redis = start_redis(root / "redis")
        pg_server = os.environ.get("PAGEMILL_DATABASE_URL")
        stop_pg = None
        if not pg_server:
            (root / "pg").mkdir()
            pg_server, stop_pg = start_postgres(root / "pg")
        big = root / "big.pdf"
        big.write_bytes(repeat_pages(ONE_PAGE, args.pages))
        runs = []
        try:
            for fair in (True, False):
                url, drop = fresh_database(pg_server)
                migrate(url)
                try:
                    runs.append(measure(root / f"run-{fair}", url, redis_url, big, args.pages, fair_share=fair,
                                        latency_ms=args.latency_ms, head_start=args.head_start))
                finally:
                    drop()
        finally:
            if stop_redis:
                stop_redis()
            if stop_pg:
                stop_pg()
    lines = [
        f"Command: `python -m bench.fair_share --pages {args.pages} --latency-ms {args.latency_ms}` "
        f"({machine.machine()}, {os.cpu_count()} cores, fake engine {args.latency_ms} ms/page, "
        "one Celery worker with 2 processes, PostgreSQL, Redis)",
        "",
        "| fair share | 1-page upload took | big upload's pages done when it ended | big upload took |",
        "|---|---|---|---|",
    ]
    for run in runs:
        lines.append(f"| {'on' if run.fair_share else 'off (FIFO)'} | {run.small_seconds:.1f} s | "
                     f"{run.big_done_when_small_ended} / {run.big_pages} | {run.big_seconds or 0:.0f} s |")
    lines += [
        "",
        "How to read it: with FIFO, the one-page upload waits behind every page of the big upload already on the "
        "queue (a PDF up to `worker.page_files_over_mb` for the cpu engine has all its pages queued with its upload, "
        "in messages of up to `worker.chunk_max_pages` pages; a larger one is queued by its split, 32 pages at a "
        "time). With fair share its page is queued at priority 0 while the big upload's chunks sit at 6 (2,000 "
        "pages in flight), so it runs next: it waits only for the chunks the workers are running (16 pages each at "
        "most), at each of its steps (page, assembly). `tests/integration/test_fair_share.py` "
        "checks the ordering.",
    ]
    report = "\n".join(lines)
    print(report)
    if args.write:
        args.write.parent.mkdir(parents=True, exist_ok=True)
        args.write.write_text("# Fair share between tenants\n\n" + report + "\n")


if __name__ == "__main__":
    main()
