"""One component per command: `pagemill gateway`, `worker`, `reconcile`, `migrate`, plus `vllm-command` and
`config` (what a deployment runs, one process each)."""

from __future__ import annotations

import click

from services.cli.root import main
from services.core.queues import Queue
from services.core.settings import get_settings

ALL_QUEUES = ",".join(q.value for q in Queue)
# Threads of a pages.gpu worker per request it may keep open (engine.max_in_flight): see `worker`.
GPU_THREADS_PER_SLOT = 2


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

    settings = get_settings()
    uvicorn.run(create_app(settings), host=host, port=port, log_level="warning", access_log=False,
                timeout_keep_alive=int(settings.limits.keep_alive_s))


@main.command()
@click.option("--queues", default=ALL_QUEUES, show_default=True, help="comma-separated queues to consume")
@click.option("--concurrency", type=int, default=None,
              help="worker processes or threads (default: settings; a pages.gpu worker: 2 x engine.max_in_flight)")
@click.option("--pool", default=None, type=click.Choice(["prefork", "threads", "solo"]),
              help="default prefork; threads for a worker of pages.gpu alone")
@click.option("--metrics-port", type=int, default=None, help="serve /metrics on this port")
@click.option("--name", default=None, help="worker node name")
def worker(queues: str, concurrency: int | None, pool: str | None, metrics_port: int | None,
           name: str | None) -> None:
    """Run a Celery worker for page, document, results and webhook queues."""
    from services.celery_worker import run_worker

    settings = get_settings()
    names = queues.split(",")
    if names == [Queue.PAGES_GPU.value]:
        # The GPU worker waits on HTTP, not on its CPU. Its engine keeps at most N = max_in_flight requests open
        # (its N sender threads per process); twice as many threads let the next pages be fetched, anchored and
        # rendered while N requests run, so a finished request's slot is taken at once (with N threads, a thread
        # busy preparing its page left its slot empty: vLLM ran half its batch, docs/benchmarks.md, GPU path).
        pool = pool or "threads"
        concurrency = concurrency or GPU_THREADS_PER_SLOT * settings.engine.max_in_flight
    run_worker(settings, queues=names, concurrency=concurrency, pool=pool or "prefork", metrics_port=metrics_port,
               name=name)


@main.command()
@click.option("--loop/--once", default=False, help="keep running every reconciler.interval_s seconds")
@click.option("--metrics-port", type=int, default=None, help="serve /metrics on this port (with --loop)")
def reconcile(loop: bool, metrics_port: int | None) -> None:
    """Re-enqueue lost or stuck work and assemble documents nobody assembled."""
    import redis

    from services.core.logging import configure_logging
    from services.core.metrics import start_metrics_server
    from services.core.queues import get_celery
    from services.reconciler.loop import reconcile_forever, reconcile_once

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


@main.command("vllm-command")
@click.option("--preset", default=None, help="model preset (default: PAGEMILL_ENGINE__PRESET)")
@click.option("--json", "as_json", is_flag=True, help="print the argv as a JSON list (container args)")
@click.option("--executable", default="vllm", show_default=True)
def vllm_command_cmd(preset: str | None, as_json: bool, executable: str) -> None:
    """Print the `vllm serve` command line for the configured preset and engine settings."""
    import json

    from services.worker.engines.vllm.serve import shell_line, vllm_command

    settings = get_settings()
    if preset:
        settings = settings.model_copy(update={"engine": settings.engine.model_copy(update={"preset": preset})})
    try:
        argv = vllm_command(settings, executable=executable)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    click.echo(json.dumps(argv) if as_json else shell_line(argv))


@main.command()
@click.option("--markdown", "mode", flag_value="markdown", default=True,
              help="print the reference table of every setting (the default)")
@click.option("--write", "mode", flag_value="write",
              help="regenerate docs/settings.md and README's settings table in place")
def config(mode: str) -> None:
    """The settings reference, generated from services/core/settings.py (env name, default, meaning)."""
    from services.core import settings_docs

    if mode == "write":
        changed = settings_docs.write()
        click.echo("updated: " + ", ".join(str(p) for p in changed) if changed else "up to date")
    else:
        click.echo(settings_docs.reference_markdown())
