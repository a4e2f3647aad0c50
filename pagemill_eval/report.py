"""Aggregating case scores overall and per kind, printing them, and the JSON that `--json` writes."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pagemill_eval import calibration, lists
from pagemill_eval.score import CaseScore

METRICS = ("olmocr_pass_rate", "text_similarity", "teds", "teds_struct")


def _mean(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(sum(present) / len(present), 4) if present else None


def aggregate(cases: list[CaseScore]) -> dict[str, Any]:
    """Rule pass rate pools every rule (passed / total); the other metrics are means over the cases that have
    that ground truth; pages/s is the document pages of the cases the parser did not fail over their summed
    parse seconds (a parser that gives up at once on a file must not look fast)."""
    rules_total = sum(c.rules_total or 0 for c in cases)
    rules_passed = sum(c.rules_passed or 0 for c in cases)
    pages = sum(c.pages for c in cases)
    seconds = sum(c.seconds for c in cases)
    parsed_pages = sum(c.pages for c in cases if not c.failed)
    parsed_seconds = sum(c.seconds for c in cases if not c.failed)
    return {
        "cases": len(cases),
        "olmocr_pass_rate": round(rules_passed / rules_total, 4) if rules_total else None,
        "olmocr_rules": rules_total,
        "olmocr_rules_passed": rules_passed,
        "text_similarity": _mean(c.text_similarity for c in cases),
        "text_cases": sum(c.text_similarity is not None for c in cases),
        "teds": _mean(c.teds for c in cases),
        "teds_struct": _mean(c.teds_struct for c in cases),
        "table_cases": sum(c.teds is not None for c in cases),
        "pages": pages,
        "seconds": round(seconds, 3),
        "pages_per_s": round(parsed_pages / parsed_seconds, 3) if parsed_seconds > 0 else None,
        "failures": sum(c.failed for c in cases),
        **lists.aggregate([c.lists for c in cases]),
    }


def by_kind(cases: list[CaseScore]) -> dict[str, dict[str, Any]]:
    """A case with several kinds (`digital,table`) counts in each of them."""
    kinds = sorted({k for c in cases for k in c.kinds})
    return {kind: aggregate([c for c in cases if kind in c.kinds]) for kind in kinds}


def build_report(cases: list[CaseScore], meta: dict[str, Any]) -> dict[str, Any]:
    entries = [c.to_json() for c in cases]
    return {"meta": meta, "overall": aggregate(cases), "by_kind": by_kind(cases),
            "calibration": calibration.summary(entries), "empty_pages": empty_pages(cases), "cases": entries}


def empty_pages(cases: list[CaseScore]) -> list[str]:
    """`case pN` for every page the parser left without a word while its ground truth has text."""
    return [f"{c.case_id} p{page}" for c in cases for page in c.empty_pages]


def _cell(value: float | None, width: int = 6) -> str:
    return f"{value:>{width}.3f}" if value is not None else f"{'-':>{width}}"


def case_line(score: CaseScore) -> str:
    rules = f"{score.rules_passed}/{score.rules_total}" if score.rules_total else "-"
    status = "FAIL" if score.error else (f"{score.failed_pages}pf" if score.failed_pages else "ok")
    return (f"{score.case_id[:44]:<44} {rules:>6} {_cell(score.text_similarity)} {_cell(score.teds)} "
            f"{_cell(score.teds_struct)} {score.pages:>5} {score.seconds:>7.2f} {status:>5}")


CASE_HEADER = f"{'case':<44} {'rules':>6} {'text':>6} {'teds':>6} {'teds-s':>6} {'pages':>5} {'sec':>7} {'stat':>5}"


def summary_lines(report: dict[str, Any]) -> list[str]:
    lines = [f"{'kind':<16} {'cases':>5} {'olmocr':>6} {'text':>6} {'teds':>6} {'teds-s':>6} {'pages/s':>8} "
             f"{'fail':>4}"]
    rows = [("OVERALL", report["overall"]), *report["by_kind"].items()]
    for name, block in rows:
        pps = block["pages_per_s"]
        lines.append(f"{name:<16} {block['cases']:>5} {_cell(block['olmocr_pass_rate'])} "
                     f"{_cell(block['text_similarity'])} {_cell(block['teds'])} {_cell(block['teds_struct'])} "
                     f"{(f'{pps:.2f}' if pps is not None else '-'):>8} {block['failures']:>4}")
    list_rows = [line for name, block in rows if (line := lists.summary_line(name, block))]
    if list_rows:
        lines += ["", lists.SUMMARY_HEADER, *list_rows]
    figures = report.get("calibration") or {}
    if figures.get("samples"):
        value = figures["auroc"]
        lines.append(f"\nconfidence AUROC for score < {calibration.BAD_SCORE}: "
                     f"{'-' if value is None else f'{value:.3f}'} ({figures['bad']} bad of {figures['samples']} cases)")
    empty = report.get("empty_pages") or []
    lines.append(f"empty pages whose truth has text: {len(empty)}" + (f" ({', '.join(empty)})" if empty else ""))
    return lines


_SIDE_ROWS = (("olmOCR rules", "olmocr_pass_rate"), ("text sim", "text_similarity"), ("TEDS", "teds"),
              ("TEDS-S", "teds_struct"), ("pages/s", "pages_per_s"), ("failures", "failures"))


def side_by_side(reports: list[dict[str, Any]]) -> list[str]:
    """Several reports (corpora, parsers) as columns, one metric a row; the confidence AUROC and the count of
    pages left empty while their truth has text at the bottom."""
    names = [f"{Path(r['meta']['corpus']).name}/{r['meta']['parser']}" for r in reports]
    width = max(12, *(len(n) for n in names))
    lines = [f"{'':<16}" + "".join(f" {n:>{width}}" for n in names)]
    for label, key in _SIDE_ROWS:
        cells = []
        for r in reports:
            value = r["overall"][key]
            cells.append("-" if value is None else str(value) if key == "failures" else f"{value:.3f}")
        lines.append(f"{label:<16}" + "".join(f" {c:>{width}}" for c in cells))
    auroc = [(r.get("calibration") or {}).get("auroc") for r in reports]
    lines.append(f"{'conf. AUROC':<16}" + "".join(f" {'-' if a is None else f'{a:.3f}':>{width}}" for a in auroc))
    lines.append(f"{'empty pages':<16}" + "".join(f" {len(r.get('empty_pages') or []):>{width}}" for r in reports))
    return lines
