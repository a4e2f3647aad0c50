"""`pagemill serve`: gateway, workers, results and reconciler on this machine, with an embedded Redis when none
is configured. Its children are kept by `services.cli.supervise`: they end with it, however it ends."""

from __future__ import annotations

import os
import shutil
import socket
import sys
from pathlib import Path
from typing import Any

import click

from services.cli.extras import require_extra
from services.cli.root import main
from services.cli.supervise import Supervisor, start_embedded_redis
from services.core.queues import Queue
from services.core.settings import get_settings

WORK_QUEUES = ",".join(q.value for q in Queue if q != Queue.WEBHOOKS)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=int)
@click.option("--data-dir", default=".pagemill", show_default=True, type=click.Path(file_okay=False))
@click.option("--workers", "worker_count", default=None, type=int, help="page worker processes")
def serve(host: str, port: int, data_dir: str, worker_count: int | None) -> None:
    """Run gateway, worker, results and reconciler on this machine (embedded Redis if none is configured)."""
    supervisor = Supervisor()
    server: Any = None  # the uvicorn.Server, once there is one

    def request_stop() -> None:
        if server is None:
            raise SystemExit(0)  # still starting: unwind to the `finally` below
        server.should_exit = True

    supervisor.install_signal_handlers(request_stop)
    try:
        server = _start(supervisor, host, port, Path(data_dir).resolve(), worker_count)
        supervisor.watch(request_stop)
        server.run()
    finally:
        supervisor.stop()
    sys.exit(supervisor.exit_code)  # 1 when a component died: `serve` never limps on half-alive


def _start(supervisor: Supervisor, host: str, port: int, data: Path, worker_count: int | None) -> Any:
    """Everything but the gateway's serving loop: Redis, migrations, the local key, the children."""
    data.mkdir(parents=True, exist_ok=True)
    os.environ["PAGEMILL_DATA_DIR"] = str(data)
    # Before anything imports prometheus_client: it picks in-process or shared-file values once, at import, and
    # the gateway's own series (HTTP requests, rejected uploads) must land in the directory `/metrics` reads.
    metrics_dir = data / "metrics"
    shutil.rmtree(metrics_dir, ignore_errors=True)
    metrics_dir.mkdir(parents=True)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(metrics_dir)
    import uvicorn

    from services.core.db.session import migrate as run_migrations
    from services.core.metrics import writes_to_multiprocess_dir
    from services.gateway.app import create_app

    if not writes_to_multiprocess_dir():
        raise click.ClickException("prometheus_client was imported before PROMETHEUS_MULTIPROC_DIR was set: the "
                                   "gateway's metrics would be missing from /metrics")
    if not os.environ.get("PAGEMILL_REDIS_URL"):
        require_extra("local", "`pagemill serve` without PAGEMILL_REDIS_URL (an embedded Redis)")
        url = start_embedded_redis(supervisor, data, free_port())
        os.environ["PAGEMILL_REDIS_URL"] = url
        click.echo(f"embedded Redis at {url}")
    get_settings.cache_clear()
    settings = get_settings()
    run_migrations(settings.resolved_database_url())
    if not os.environ.get("PAGEMILL_DATABASE_URL"):
        key_file, raw_key, created = ensure_local_key(settings.resolved_database_url(), data)
        click.echo(f"API key of the local tenant{' (new)' if created else ''}: {raw_key}  (saved in {key_file})")
    queues = WORK_QUEUES
    if settings.engine.kind == "vllm":  # pages for vLLM get their own threaded worker (see `worker`)
        queues = ",".join(q for q in WORK_QUEUES.split(",") if q != Queue.PAGES_GPU.value)
        supervisor.start_pagemill("the vLLM page worker", "worker", "--name", "pagemill-gpu@local",
                                  "--queues", Queue.PAGES_GPU.value)
    supervisor.start_pagemill("the worker", "worker", "--name", "pagemill@local", "--queues", queues,
                              *(["--concurrency", str(worker_count)] if worker_count else []))
    # Webhook receivers can be slow or silent: they wait on threads of their own, never on page workers.
    supervisor.start_pagemill("the webhook worker", "worker", "--name", "webhooks@local", "--queues",
                              Queue.WEBHOOKS.value, "--pool", "threads", "--concurrency", "8")
    supervisor.start_pagemill("the reconciler", "reconcile", "--loop")
    click.echo(f"pagemill on http://{host}:{port}  (data in {data}, engine {settings.engine.kind.value})")
    config = uvicorn.Config(create_app(settings), host=host, port=port, log_level="warning", access_log=False,
                            timeout_keep_alive=int(settings.limits.keep_alive_s))
    return uvicorn.Server(config)


def ensure_local_key(database_url: str, data_dir: Path) -> tuple[Path, str, bool]:
    """On embedded defaults: a `local` tenant and a key in `<data-dir>/api_key`, reused while it is valid."""
    from services.core import tenants
    from services.core.db.session import session_scope

    key_file = data_dir / "api_key"
    saved = key_file.read_text().strip() if key_file.exists() else None
    with session_scope(database_url) as session:
        raw, created = tenants.ensure_local_key(session, saved, tenant_name="local", key_name="pagemill serve")
    if created:
        key_file.write_text(raw + "\n")
        key_file.chmod(0o600)
    return key_file, raw, created
