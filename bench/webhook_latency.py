"""`make bench-webhooks` (part of `make bench`): from a document's last page result to its `document.succeeded`
webhook arriving at a real HTTP receiver, p50 and p99.

The platform as `pagemill serve` runs it (page worker, results, a thread-pool webhook worker, PostgreSQL, Redis)
on the fake engine; documents are uploaded a few at a time (`--in-flight`), each with the webhook endpoint
subscribed to `document.succeeded`. For each document: the last page's `finished_at` (the page row, written
when its result was stored), the document's `finished_at` (assembled, final status and event committed) and
the moment the receiver got the webhook, all on this machine's clock.
"""

from __future__ import annotations

import argparse
import json
import os
import platform as host
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from pagemill_eval.sections import write_section
from services.core.db.models import Document, Page
from services.core.db.session import session_scope
from tests.harness import CORPUS, REPO, Platform
from tests.pdfs import repeat_pages
from tests.servers import fresh_database, start_postgres, start_redis

SECTION = "bench-webhooks"


class ArrivalReceiver:
    """An HTTP receiver that answers 204 and records when each document's `document.succeeded` arrived."""

    def __init__(self) -> None:
        self.arrived: dict[str, datetime] = {}
        self.changed = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # the http.server API
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                at = datetime.now(UTC)
                self.send_response(204)
                self.send_header("content-length", "0")
                self.end_headers()
                event = json.loads(body)
                if event.get("type") == "document.succeeded":
                    with receiver.changed:
                        receiver.arrived.setdefault(event["data"]["document_id"], at)
                        receiver.changed.notify_all()

            def log_message(self, *_: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait(self, document_id: str, timeout: float) -> datetime:
        with self.changed:
            if not self.changed.wait_for(lambda: document_id in self.arrived, timeout):
                raise AssertionError(f"no webhook for {document_id} within {timeout} s")
            return self.arrived[document_id]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def timings(database_url: str, document_id: str) -> tuple[datetime, datetime]:
    """The last page's end and the document's end, as the database recorded them."""
    with session_scope(database_url) as session:
        last_page = session.execute(sa.select(sa.func.max(Page.finished_at)).where(Page.document_id == document_id)
                                    ).scalar_one()
        finished = session.execute(sa.select(Document.finished_at).where(Document.id == document_id)).scalar_one()
    return last_page, finished


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def run(platform: Platform, receiver: ArrivalReceiver, args: argparse.Namespace,
        workdir: Path) -> dict[str, list[float]]:
    pdf = workdir / f"{args.pages}.pdf"
    pdf.write_bytes(repeat_pages(CORPUS / "dev" / "docling_multi_page" / "multi_page.pdf", args.pages))
    with platform.client() as client:
        response = client.post("/v1/webhooks", json={"url": receiver.url, "events": ["document.succeeded"]})
        assert response.status_code == 201, response.text
    warm = str(platform.upload(pdf, cache="false")["id"])
    receiver.wait(warm, 120)

    def one(_: int) -> tuple[float, float, float]:
        document_id = str(platform.upload(pdf, cache="false")["id"])
        arrived = receiver.wait(document_id, 120)
        last_page, finished = timings(platform.database_url, document_id)
        return ((arrived - last_page).total_seconds(), (finished - last_page).total_seconds(),
                (arrived - finished).total_seconds())

    with ThreadPoolExecutor(args.in_flight) as pool:
        samples = list(pool.map(one, range(args.documents)))
    return {"total": [s[0] for s in samples], "assembly": [s[1] for s in samples], "delivery": [s[2] for s in samples]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--documents", type=int, default=100)
    parser.add_argument("--pages", type=int, default=2)
    parser.add_argument("--in-flight", type=int, default=2, help="documents uploaded and not yet notified, at most")
    parser.add_argument("--write", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pagemill-bench-webhooks-") as tmp:
        workdir = Path(tmp)
        redis_url, stop_redis = start_redis(workdir)
        pg_server, stop_pg = start_postgres(workdir)
        database_url, drop = fresh_database(pg_server)
        receiver = ArrivalReceiver()
        platform = Platform(workdir=workdir / "platform", database_url=database_url, redis_base_url=redis_url,
                            engine="fake", extra_env={"PAGEMILL_LOG_LEVEL": "WARNING"})
        try:
            platform.start(concurrency=2, webhook_worker=True)
            result = run(platform, receiver, args, workdir)
        finally:
            platform.stop()
            receiver.close()
            drop()
            stop_pg()
            stop_redis()
    command = (f"make bench-webhooks  # python -m bench.webhook_latency --documents {args.documents} "
               f"--pages {args.pages} --in-flight {args.in_flight}")
    rows = [("last page result → `document.succeeded` at the receiver", result["total"]),
            ("of which: last page → document finished (assembly: Markdown, HTML, LaTeX, JSON, chunks)",
             result["assembly"]),
            ("of which: document finished → webhook received (delivery)", result["delivery"])]
    lines = [
        "## Webhook latency (`make bench-webhooks`, part of `make bench`)", "",
        f"Command: `{command}`  ",
        f"Machine: {os.cpu_count()} cores, {host.machine()}, Python {host.python_version()}; measured "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. Fake engine, PostgreSQL, Redis; a page worker "
        "(prefork, concurrency 2: pages, splits, assembly) and a thread-pool webhook worker, as `pagemill serve` "
        f"runs them; {args.documents} documents of {args.pages} pages, {args.in_flight} in flight, one endpoint "
        "subscribed to `document.succeeded` on a real HTTP receiver.", "",
        "| span | p50 | p99 | max |", "|---|---|---|---|",
        *(f"| {label} | {statistics.median(values) * 1000:.0f} ms | {percentile(values, 0.99) * 1000:.0f} ms | "
          f"{max(values) * 1000:.0f} ms |" for label, values in rows),
    ]
    text = "\n".join(lines)
    print(text)
    if args.write:
        write_section(args.write, text, SECTION)


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    main()
