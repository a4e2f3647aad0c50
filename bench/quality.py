"""`make bench-quality`: pagemill's cpu engine and the CPU peers over one corpus, scored by `pagemill eval`.

Each peer runs in its own venv (bench/peers/run_peers.py, AGPL ones included: never in pagemill's), one peer
after the other, and saves per-page Markdown; pagemill runs in this process through `parse_locally`. All
outputs are scored by the same scorer, and the table goes into docs/benchmarks.md between this benchmark's
markers, leaving the file's other sections alone.

    python -m bench.quality --corpus ../shared/corpus/dev --corpus ../shared/corpus/wide \
        --peers-python .venv-peers/bin/python --write docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

from pagemill_eval.evaluate import evaluate
from pagemill_eval.run import LocalPagemill, SavedPredictions
from pagemill_eval.sections import write_section
from services.core.settings import Settings

START, END = "<!-- bench-quality:start -->", "<!-- bench-quality:end -->"
PEERS = ["pypdfium2", "pymupdf4llm", "markitdown", "unstructured", "rapidocr"]
PEER_LABELS = {"pypdfium2": "pypdfium2 plain text", "pymupdf4llm": "pymupdf4llm", "markitdown": "markitdown",
               "unstructured": "unstructured (fast)", "rapidocr": "RapidOCR plain lines"}
RUNNER = Path(__file__).with_name("peers") / "run_peers.py"


def run_peer(peer: str, python: str, corpus: Path, out: Path, patterns: list[str]) -> None:
    command = [python, str(RUNNER), "--peer", peer, "--corpus", str(corpus), "--out", str(out)]
    for pattern in patterns:
        command += ["--cases", pattern]
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "2")}
    subprocess.run(command, check=True, env=env)


def versions(python: str) -> dict[str, str]:
    script = ("import importlib.metadata as m, json; print(json.dumps({p: m.version(p) for p in "
              "['pypdfium2', 'pymupdf', 'pymupdf4llm', 'markitdown', 'unstructured', 'rapidocr']}))")
    result = subprocess.run([python, "-c", script], capture_output=True, text=True, check=False)
    return json.loads(result.stdout) if result.returncode == 0 else {}


def _fmt(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _row(name: str, block: dict[str, Any]) -> str:
    pps = block["pages_per_s"]
    return (f"| {name} | {_fmt(block['olmocr_pass_rate'])} | {_fmt(block['text_similarity'])} "
            f"| {_fmt(block['teds'])} | {_fmt(block['teds_struct'])} | {_fmt(pps, 2 if pps and pps < 100 else 0)} "
            f"| {block['failures']} |")


def render_section(by_corpus: dict[str, dict[str, dict[str, Any]]], command: str,
                   peer_versions: dict[str, str]) -> str:
    """`by_corpus`: corpus folder -> parser -> report. The corpora side by side first, then each corpus alone,
    overall and per kind."""
    header = ("| parser | olmOCR rules | text sim | TEDS | TEDS-S | pages/s | failures |\n"
              "|---|---|---|---|---|---|---|")
    lines = [
        START,
        "## Parse quality: pagemill cpu vs CPU peers (`make bench-quality`)",
        "",
        f"Measured {dt.date.today().isoformat()} on {os.cpu_count()} cores, Python {platform.python_version()}, "
        "one parser at a time, one process each.",
        "Metrics and their ground truth: docs/evaluation.md. olmOCR rules = rules passed / rules; text sim and "
        "TEDS = mean over the cases that have that ground truth; pages/s = document pages / summed parse seconds "
        "over the cases the parser did not fail (model loading included); failures = cases where the parser "
        "raised or lost pages. "
        "Differences under ~0.05 are noise at this size.",
        "",
        "Produced by:",
        "",
        "```",
        command,
        "```",
        "",
        *_side_by_side(by_corpus),
    ]
    for corpus, reports in by_corpus.items():
        first = next(iter(reports.values()))["overall"]
        lines += ["", f"### `{corpus}`: {first['cases']} cases, {first['pages']} pages ({first['olmocr_rules']} "
                  f"olmOCR rules, {first['text_cases']} text references, {first['table_cases']} table references)",
                  "", header, *(_row(name, report["overall"]) for name, report in reports.items())]
        kinds = sorted({kind for report in reports.values() for kind in report["by_kind"]})
        for kind in kinds:
            blocks = {name: report["by_kind"].get(kind) for name, report in reports.items()}
            count = next((b["cases"] for b in blocks.values() if b), 0)
            lines += ["", f"#### `{Path(corpus).name}`, kind: {kind} ({count} cases)", "", header,
                      *(_row(name, block) for name, block in blocks.items() if block)]
    if peer_versions:
        lines += ["", "Peer versions: " + ", ".join(f"{k} {v}" for k, v in sorted(peer_versions.items())) + "."]
    lines.append(END)
    return "\n".join(lines) + "\n"


def _side_by_side(by_corpus: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    names = [Path(corpus).name for corpus in by_corpus]
    columns = [(name, label, key) for name in names
               for label, key in (("rules", "olmocr_pass_rate"), ("text", "text_similarity"), ("TEDS", "teds"))]
    parsers = list(dict.fromkeys(parser for reports in by_corpus.values() for parser in reports))
    lines = ["### The corpora side by side", "",
             "| parser | " + " | ".join(f"{name} {label}" for name, label, _ in columns) + " |",
             "|---|" + "---|" * len(columns)]
    for parser in parsers:
        cells = []
        for reports, name in zip(by_corpus.values(), names, strict=True):
            report = reports.get(parser)
            for column_name, _, key in columns:
                if column_name == name:
                    cells.append(_fmt(report["overall"][key]) if report else "–")
        lines.append(f"| {parser} | " + " | ".join(cells) + " |")
    return lines





def _one_corpus(corpus: Path, args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """pagemill cpu and each peer over one corpus; outputs under --work/<corpus name>/<parser>."""
    work = args.work / corpus.name
    reports: dict[str, dict[str, Any]] = {}
    print(f"== pagemill cpu on {corpus}", flush=True)
    if args.rescore:
        reports["**pagemill cpu**"] = evaluate(corpus, SavedPredictions(work / "pagemill-cpu", "pagemill-cpu"),
                                               patterns=args.cases or None)
    else:
        reports["**pagemill cpu**"] = evaluate(corpus, LocalPagemill(Settings(), "cpu"), patterns=args.cases or None,
                                               save_outputs=work / "pagemill-cpu")
    for peer in [p for p in args.peers.split(",") if p]:
        print(f"== {peer} on {corpus}", flush=True)
        out = work / peer
        if not args.rescore:
            run_peer(peer, args.peers_python, corpus, out, args.cases)
        reports[PEER_LABELS.get(peer, peer)] = evaluate(corpus, SavedPredictions(out, peer),
                                                        patterns=args.cases or None)
    return reports


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", required=True, type=Path, action="append",
                        help="a corpus folder (repeatable: dev and wide are reported side by side)")
    parser.add_argument("--peers-python", required=True, help="the peers venv's python")
    parser.add_argument("--peers", default=",".join(PEERS), help="comma-separated subset of " + ",".join(PEERS))
    parser.add_argument("--cases", action="append", default=[], help="case-id glob (repeatable)")
    parser.add_argument("--work", type=Path, default=Path(".pagemill/bench-quality"), help="outputs and reports")
    parser.add_argument("--write", type=Path, default=None, help="docs/benchmarks.md")
    parser.add_argument("--command", default=None, help="the command line to print in the section")
    parser.add_argument("--rescore", action="store_true",
                        help="score the outputs a previous run saved in --work, parsing nothing")
    args = parser.parse_args()

    by_corpus: dict[str, dict[str, dict[str, Any]]] = {}
    for corpus_arg in args.corpus:
        by_corpus[str(corpus_arg)] = _one_corpus(corpus_arg.resolve(), args)
    (args.work / "reports.json").write_text(json.dumps(by_corpus, indent=1, ensure_ascii=False), encoding="utf-8")
    command = args.command or " ".join(["python -m bench.quality", *sys.argv[1:]])
    section = render_section(by_corpus, command, versions(args.peers_python))
    print(section)
    if args.write:
        write_section(args.write, section, "bench-quality")
        print(f"wrote {args.write}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
