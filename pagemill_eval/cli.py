"""The `pagemill eval` command's body: options to a source, progress lines, the summary, the JSON file."""

from __future__ import annotations

import json
from pathlib import Path

import click

from pagemill_eval.evaluate import evaluate
from pagemill_eval.report import CASE_HEADER, case_line, summary_lines
from pagemill_eval.run import LocalPagemill, RemotePagemill, SavedPredictions, Source
from services.core.settings import Settings


def run_eval(corpus_dir: Path, *, settings: Settings, engine: str | None, mode: str | None, json_out: Path | None,
             patterns: list[str], server: str | None, api_key: str | None, predictions: Path | None,
             save_outputs: Path | None, name: str | None, quiet: bool) -> dict[str, object]:
    source: Source
    if predictions is not None:
        source = SavedPredictions(predictions, name)
    elif server:
        source = RemotePagemill(server, api_key=api_key, mode=mode)
    else:
        source = LocalPagemill(settings, engine)
    if name:
        source.name = name
    if not quiet:
        click.echo(CASE_HEADER)
    report = evaluate(corpus_dir, source, patterns=patterns or None, save_outputs=save_outputs,
                      on_case=None if quiet else lambda score: click.echo(case_line(score)))
    report["meta"]["mode"] = mode
    click.echo("")
    for line in summary_lines(report):
        click.echo(line)
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        click.echo(f"\nwrote {json_out}")
    return report
