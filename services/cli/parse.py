"""`pagemill parse`: files to Markdown (and HTML, LaTeX, JSON, chunks), through a pagemill server or in this
process, a progress bar per file."""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import click

from services.cli.root import main
from services.core.errors import PagemillError
from services.core.settings import OutputFormat, Settings, get_settings

if TYPE_CHECKING:
    import pagemill_client

# What each format is written as, next to the input's name.
SUFFIXES = {"markdown": ".md", "html": ".html", "latex": ".tex", "json": ".json", "chunks": ".chunks.json",
            "translation": ".translation.md", "extraction": ".extraction.json", "summary": ".summary.md"}
# A model task's answer, fetched and written beside the parse formats.
TASK_FORMATS = {"translate": "translation", "extract": "extraction", "summarize": "summary"}


def _formats(_: click.Context, __: click.Parameter, value: str) -> list[str]:
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
@click.option("--task", default="parse", show_default=True, type=click.Choice(["parse", *TASK_FORMATS]),
              help="with --server: after parsing, a model task; its answer goes to NAME.translation.md, "
                   "NAME.extraction.json or NAME.summary.md")
@click.option("--target-language", default=None, help="--task translate: the language to translate into")
@click.option("--schema", "schema_file", default=None, type=click.Path(exists=True, dir_okay=False),
              help="--task extract: a file holding the JSON Schema to extract")
@click.option("--figures/--no-figures", default=True, show_default=True,
              help="keep the figures' images, in NAME.figures/ (Markdown and LaTeX link them there)")
@click.option("--merge-tables/--no-merge-tables", default=True, show_default=True,
              help="a table that goes on over the next page becomes one table (with its parts)")
@click.option("--furniture", default="drop", show_default=True, type=click.Choice(["drop", "keep"]),
              help="keep: page headers, footers and page numbers stay in Markdown, LaTeX and chunks, marked")
def parse(files: tuple[str, ...], output_dir: str, server: str | None, api_key: str | None, mode: str | None,
          engine: str | None, formats: list[str], task: str, target_language: str | None,
          schema_file: str | None, figures: bool, merge_tables: bool, furniture: str) -> None:
    """Parse FILES into OUTPUT_DIR (NAME.md, .html, .tex, .json, .chunks.json, NAME.figures/), a progress bar
    per file."""
    if task != "parse" and not server:
        raise click.UsageError("--task needs --server: model tasks run on a pagemill server with a vLLM engine")
    try:
        schema = json.loads(Path(schema_file).read_text()) if schema_file else None
    except ValueError as exc:
        raise click.BadParameter(f"not JSON: {exc}", param_hint="--schema") from None
    ok = parse_files([Path(f) for f in files], Path(output_dir), server=server, api_key=api_key, mode=mode,
                     engine=engine, settings=get_settings(), formats=formats,
                     task=TaskRequest(task, target_language, schema, figures, furniture, merge_tables))
    sys.exit(0 if ok else 1)


@dataclass(frozen=True)
class TaskRequest:
    """What `--task` asks of the server besides parsing (the API's `task`, `target_language`, `schema`)."""

    kind: str = "parse"
    target_language: str | None = None
    schema: dict[str, Any] | None = None
    figures: bool = True  # and, beside parsing, what the results keep
    furniture: str = "drop"
    merge_tables: bool = True


def parse_files(files: list[Path], output_dir: Path, *, server: str | None, api_key: str | None,
                mode: str | None, engine: str | None, settings: Settings,
                formats: list[str] | None = None, task: TaskRequest | None = None) -> bool:
    output_dir.mkdir(parents=True, exist_ok=True)
    task = task or TaskRequest()
    formats = [*(formats or ["markdown"]), *([TASK_FORMATS[task.kind]] if task.kind in TASK_FORMATS else [])]
    ok = True
    for path in files:
        try:
            if server:
                bodies, status, images = _parse_remote(path, server.rstrip("/"), api_key, mode, formats, task)
            else:
                bodies, status, images = _parse_local(path, settings, engine, formats, task)
        except (PagemillError, RemoteError) as exc:
            click.echo(f"{path.name}: {getattr(exc, 'code', 'error')}: {exc}", err=True)
            ok = False
            continue
        targets = []
        folder = f"{path.stem}.figures"
        for name, image in images.items():
            (output_dir / folder).mkdir(exist_ok=True)
            (output_dir / folder / name.removeprefix("figures/")).write_bytes(image)
        for fmt in formats:
            target = output_dir / f"{path.stem}{SUFFIXES[fmt]}"
            target.write_bytes(relinked(bodies[fmt], fmt, folder) if images else bodies[fmt])
            targets.append(str(target))
        click.echo(f"{path.name}: {status} -> {', '.join(targets)}")
        ok = ok and status == "succeeded"
    return ok


_FIGURE_LINK = re.compile(rb"(\]\(|\{)figures/(p[0-9]+-e[0-9]+\.(?:png|jpg))")
_TEX_SAFE = re.compile(r"^[A-Za-z0-9._-]+$")


def relinked(body: bytes, fmt: str, folder: str) -> bytes:
    """Markdown and LaTeX with their `figures/…` links pointing at NAME.figures/, where the images were saved
    (one folder per file: every document's figures are named p1-e2.png …). A name LaTeX cannot take as a path
    leaves the .tex as it is (it compiles, with a framed note per figure)."""
    if fmt not in ("markdown", "latex") or (fmt == "latex" and not _TEX_SAFE.match(folder)):
        return body
    target = folder.encode() if fmt == "latex" else folder.replace(" ", "%20").encode()
    return _FIGURE_LINK.sub(lambda m: m.group(1) + target + b"/" + m.group(2), body)


def _parse_local(path: Path, settings: Settings, engine: str | None, formats: list[str],
                 task: TaskRequest) -> tuple[dict[str, bytes], str, dict[str, bytes]]:
    from services.runner import page_inputs, parse_locally, parse_natively, render_local  # imported only here

    data = path.read_bytes()
    native = parse_natively(data, settings)  # DOCX, HTML, EPUB, e-mail: no engine, no pages to crop figures from
    if native is not None:
        status = "succeeded" if native.failed == 0 else "failed"
        return render_local(native, settings, formats, filename=path.name, keep_furniture=task.furniture == "keep",
                            figures={}), status, {}
    _, pages = page_inputs(data)  # validates first, so a bad file fails before the bar appears
    with click.progressbar(length=len(pages), label=path.name, show_pos=True) as bar:
        result = parse_locally(data, settings, engine_name=engine, on_page=lambda _: bar.update(1))
    status = "succeeded" if result.failed == 0 else ("failed" if result.failed == len(result.pages) else "partial")
    images: dict[str, bytes] = {}
    bodies = render_local(result, settings, formats, filename=path.name, source=data if task.figures else None,
                          keep_furniture=task.furniture == "keep", figures=images, merge=task.merge_tables)
    return bodies, status, images


def _as_bytes(body: Any) -> bytes:
    """The SDK hands text formats back as text and JSON ones parsed; the files hold them as the server sent."""
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode("utf-8")
    return json.dumps(body, ensure_ascii=False).encode("utf-8")


def _parse_remote(path: Path, server: str, api_key: str | None, mode: str | None,
                  formats: list[str], task: TaskRequest) -> tuple[dict[str, bytes], str, dict[str, bytes]]:
    """Through the Python SDK (clients/python): retries, an idempotent upload, progress over SSE."""
    try:  # only here: parsing in this process needs no SDK (server images do not ship it)
        import pagemill_client
    except ImportError:
        raise click.ClickException("`pagemill parse --server` needs the Python SDK: pip install ./clients/python "
                                   "(make install does)") from None

    try:
        with pagemill_client.Client(server, api_key, timeout=120) as client:
            created = client.submit(path, mode=cast("pagemill_client.Mode | None", mode),  # the server checks them
                                    task=cast("pagemill_client.Task", task.kind) if task.kind != "parse" else None,
                                    target_language=task.target_language, schema=task.schema,
                                    **_result_options(task))
            with click.progressbar(length=created.pages_total, label=path.name, show_pos=True) as bar:
                shown = [0]

                def advance(progress: pagemill_client.Progress) -> None:
                    ended = progress.pages_done + progress.pages_failed
                    bar.update(ended - shown[0])
                    shown[0] = ended

                state = client.wait(created.id, on_progress=advance)
            if state.status == "cancelled":
                raise RemoteError("cancelled", "the document was cancelled")
            bodies = {fmt: _as_bytes(client.result(created.id, cast("pagemill_client.Format", fmt)))
                      for fmt in formats}
            images = client.figures(created.id) if task.figures and state.status != "failed" else {}
            return bodies, state.status, images
    except pagemill_client.PagemillError as exc:
        raise RemoteError(getattr(exc, "code", "error"), str(exc)) from exc


def _result_options(task: TaskRequest) -> dict[str, Any]:
    """figures, furniture and merge_tables for the SDK's submit, only when not the defaults (an older SDK takes
    none of them)."""
    return {**({"figures": False} if not task.figures else {}),
            **({"furniture": task.furniture} if task.furniture != "drop" else {}),
            **({"merge_tables": False} if not task.merge_tables else {})}


class RemoteError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
