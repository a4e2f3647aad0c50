"""The `pagemill eval` command's body: options to a source, progress lines, the summary, the JSON file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from pagemill_eval import calibration
from pagemill_eval.evaluate import evaluate
from pagemill_eval.report import CASE_HEADER, case_line, side_by_side, summary_lines
from pagemill_eval.run import LocalPagemill, RemotePagemill, SavedPredictions, Source
from services.core.settings import Settings

CORPUS_FIELD = "{corpus}"


def run_eval(corpus_dirs: list[Path], *, settings: Settings, engine: str | None, mode: str | None,
             json_out: Path | None, patterns: list[str], server: str | None, api_key: str | None,
             predictions: Path | None, save_outputs: Path | None, name: str | None, quiet: bool,
             beside: list[tuple[str, str]] | None = None) -> dict[str, Any]:
    """One corpus: its report (`{meta, overall, by_kind, calibration, empty_pages, cases}`). Several corpora or
    `beside` parsers (saved outputs, `{corpus}` in the folder standing for the corpus folder's name): every
    report, and a table of them side by side."""
    reports: list[dict[str, Any]] = []
    for corpus_dir in corpus_dirs:
        field = corpus_dir.name
        source = _source(settings, engine, mode, server, api_key,
                         _per_corpus(predictions, field, len(corpus_dirs)), name)
        if not quiet:
            click.echo(f"== {source.name} on {corpus_dir}\n{CASE_HEADER}")
        saved = _per_corpus(save_outputs, field, len(corpus_dirs))
        report = evaluate(corpus_dir, source, patterns=patterns or None, save_outputs=saved,
                          on_case=None if quiet else lambda score: click.echo(case_line(score)))
        report["meta"]["mode"] = mode
        click.echo("")
        for line in summary_lines(report):
            click.echo(line)
        reports.append(report)
        for peer, folder in beside or []:
            peer_source = SavedPredictions(Path(folder.replace(CORPUS_FIELD, field)), peer)
            reports.append(evaluate(corpus_dir, peer_source, patterns=patterns or None))
    result: dict[str, Any] = reports[0] if len(reports) == 1 else {"reports": reports}
    if len(reports) > 1:
        click.echo("")
        for line in side_by_side(reports):
            click.echo(line)
        result["calibration_pooled"] = pooled_calibration(reports)
        for parser, figures in result["calibration_pooled"].items():
            if figures["auroc"] is not None and len(corpus_dirs) > 1:
                click.echo(f"{parser}: confidence AUROC over all corpora {figures['auroc']:.3f} "
                           f"({figures['bad']} bad of {figures['samples']} cases)")
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        click.echo(f"\nwrote {json_out}")
    return result


def pooled_calibration(reports: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each parser's confidence figures over the cases of all the corpora it ran on."""
    cases: dict[str, list[dict[str, Any]]] = {}
    for report in reports:
        cases.setdefault(report["meta"]["parser"], []).extend(report["cases"])
    return {parser: calibration.summary(entries) for parser, entries in cases.items()}


def _source(settings: Settings, engine: str | None, mode: str | None, server: str | None, api_key: str | None,
            predictions: Path | None, name: str | None) -> Source:
    source: Source
    if predictions is not None:
        source = SavedPredictions(predictions, name)
    elif server:
        source = RemotePagemill(server, api_key=api_key, mode=mode)
    else:
        source = LocalPagemill(settings, engine)
    if name:
        source.name = name
    return source


def _per_corpus(folder: Path | None, corpus: str, corpora: int) -> Path | None:
    """A folder option for one corpus: `{corpus}` replaced, else a subfolder per corpus when there are several."""
    if folder is None:
        return None
    if CORPUS_FIELD in str(folder):
        return Path(str(folder).replace(CORPUS_FIELD, corpus))
    return folder / corpus if corpora > 1 else folder
