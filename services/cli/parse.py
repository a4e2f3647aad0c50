"""`pagemill parse`: files to Markdown, through a pagemill server or in this process, a progress bar per file."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, cast

import click

from services.cli.root import main
from services.core.errors import PagemillError
from services.core.settings import Settings, get_settings

if TYPE_CHECKING:
    import pagemill_client


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
    ok = parse_files([Path(f) for f in files], Path(output_dir), server=server, api_key=api_key, mode=mode,
                     engine=engine, settings=get_settings())
    sys.exit(0 if ok else 1)


def parse_files(files: list[Path], output_dir: Path, *, server: str | None, api_key: str | None,
                mode: str | None, engine: str | None, settings: Settings) -> bool:
    output_dir.mkdir(parents=True, exist_ok=True)
    ok = True
    for path in files:
        try:
            if server:
                markdown, status = _parse_remote(path, server.rstrip("/"), api_key, mode)
            else:
                markdown, status = _parse_local(path, settings, engine)
        except (PagemillError, RemoteError) as exc:
            click.echo(f"{path.name}: {getattr(exc, 'code', 'error')}: {exc}", err=True)
            ok = False
            continue
        target = output_dir / f"{path.stem}.md"
        target.write_text(markdown, encoding="utf-8")
        click.echo(f"{path.name}: {status} -> {target}")
        ok = ok and status == "succeeded"
    return ok


def _parse_local(path: Path, settings: Settings, engine: str | None) -> tuple[str, str]:
    from services.runner import page_inputs, parse_locally  # the engines: imported only to parse here

    data = path.read_bytes()
    _, pages = page_inputs(data)  # validates first, so a bad file fails before the bar appears
    with click.progressbar(length=len(pages), label=path.name, show_pos=True) as bar:
        result = parse_locally(data, settings, engine_name=engine, on_page=lambda _: bar.update(1))
    status = "succeeded" if result.failed == 0 else ("failed" if result.failed == len(result.pages) else "partial")
    return result.markdown, status


def _parse_remote(path: Path, server: str, api_key: str | None, mode: str | None) -> tuple[str, str]:
    """Through the Python SDK (clients/python): retries, an idempotent upload, progress over SSE."""
    try:  # only here: parsing in this process needs no SDK (server images do not ship it)
        import pagemill_client
    except ImportError:
        raise click.ClickException("`pagemill parse --server` needs the Python SDK: pip install ./clients/python "
                                   "(make install does)") from None

    try:
        with pagemill_client.Client(server, api_key, timeout=120) as client:
            created = client.submit(path, mode=cast("pagemill_client.Mode | None", mode))  # the server checks it
            with click.progressbar(length=created.pages_total, label=path.name, show_pos=True) as bar:
                shown = [0]

                def advance(progress: pagemill_client.Progress) -> None:
                    ended = progress.pages_done + progress.pages_failed
                    bar.update(ended - shown[0])
                    shown[0] = ended

                state = client.wait(created.id, on_progress=advance)
            if state.status == "cancelled":
                raise RemoteError("cancelled", "the document was cancelled")
            return str(client.result(created.id, "markdown")), state.status
    except pagemill_client.PagemillError as exc:
        raise RemoteError(getattr(exc, "code", "error"), str(exc)) from exc


class RemoteError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
