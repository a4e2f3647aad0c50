"""`pagemill parse`: files to Markdown (and HTML, LaTeX, JSON, chunks), through a pagemill server or in this
process, a progress bar per file."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click
import httpx

from services.core.errors import PagemillError
from services.core.settings import Settings
from services.runner import parse_locally, render_local

FINAL = {"succeeded", "partial", "failed", "cancelled"}
# What each format is written as, next to the input's name.
SUFFIXES = {"markdown": ".md", "html": ".html", "latex": ".tex", "json": ".json", "chunks": ".chunks.json"}


def parse_files(files: list[Path], output_dir: Path, *, server: str | None, api_key: str | None,
                mode: str | None, engine: str | None, settings: Settings,
                formats: list[str] | None = None) -> bool:
    output_dir.mkdir(parents=True, exist_ok=True)
    formats = formats or ["markdown"]
    ok = True
    for path in files:
        try:
            if server:
                bodies, status = _parse_remote(path, server.rstrip("/"), api_key, mode, formats)
            else:
                bodies, status = _parse_local(path, settings, engine, formats)
        except (PagemillError, RemoteError) as exc:
            click.echo(f"{path.name}: {getattr(exc, 'code', 'error')}: {exc}", err=True)
            ok = False
            continue
        targets = []
        for fmt in formats:
            target = output_dir / f"{path.stem}{SUFFIXES[fmt]}"
            target.write_bytes(bodies[fmt])
            targets.append(str(target))
        click.echo(f"{path.name}: {status} -> {', '.join(targets)}")
        ok = ok and status == "succeeded"
    return ok


def _parse_local(path: Path, settings: Settings, engine: str | None,
                 formats: list[str]) -> tuple[dict[str, bytes], str]:
    from services.runner import page_inputs

    data = path.read_bytes()
    _, pages = page_inputs(data)  # validates first, so a bad file fails before the bar appears
    with click.progressbar(length=len(pages), label=path.name, show_pos=True) as bar:
        result = parse_locally(data, settings, engine_name=engine, on_page=lambda _: bar.update(1))
    status = "succeeded" if result.failed == 0 else ("failed" if result.failed == len(result.pages) else "partial")
    return render_local(result, settings, formats, filename=path.name), status


class RemoteError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def _check(response: httpx.Response) -> dict[str, Any]:
    if response.status_code >= 400:
        try:
            error = response.json()["error"]
        except Exception:  # noqa: BLE001 - a proxy's HTML error page, say
            error = {"code": f"http_{response.status_code}", "message": response.text[:200]}
        raise RemoteError(error["code"], error["message"])
    body: dict[str, Any] = response.json()
    return body


def _parse_remote(path: Path, server: str, api_key: str | None, mode: str | None,
                  formats: list[str]) -> tuple[dict[str, bytes], str]:
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    with httpx.Client(base_url=server, headers=headers, timeout=120) as client:
        data: dict[str, str] = {"mode": mode} if mode else {}
        with path.open("rb") as handle:
            created = _check(client.post("/v1/documents", files={"file": (path.name, handle)}, data=data))
        document_id = created["id"]
        with click.progressbar(length=created["pages_total"], label=path.name, show_pos=True) as bar:
            shown = 0
            while True:
                state = _check(client.get(f"/v1/documents/{document_id}", params={"wait": 10}))
                ended = state["pages_done"] + state["pages_failed"]
                bar.update(ended - shown)
                shown = ended
                if state["status"] in FINAL:
                    break
                time.sleep(0.05)
        if state["status"] == "cancelled":
            raise RemoteError("cancelled", "the document was cancelled")
        bodies = {}
        for fmt in formats:
            result = client.get(f"/v1/documents/{document_id}/result", params={"format": fmt})
            if result.status_code >= 400:
                _check(result)
            bodies[fmt] = result.content
        return bodies, state["status"]
