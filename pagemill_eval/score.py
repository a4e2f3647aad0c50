"""One case's scores, from its ground truth and a parser's per-page Markdown."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from pagemill_eval.corpus import Case
from pagemill_eval.lists import ListScore, reference_lists, score_lists
from pagemill_eval.math_render import MathComparer
from pagemill_eval.olmocr_rules import Rule, load_rules
from pagemill_eval.run import Outcome
from pagemill_eval.teds import match_tables
from pagemill_eval.textsim import similarity, split_zones, zoned_similarity

_HTML_TABLE = re.compile(r"<table\b.*?</table>", re.IGNORECASE | re.DOTALL)
_WORD = re.compile(r"\w", re.UNICODE)
# Rule types that say the page holds some text.
_TEXT_RULES = ("present", "order", "table", "math")


@dataclass(slots=True)
class CaseScore:
    case_id: str
    kinds: list[str]
    tier: str
    pages: int
    seconds: float
    failed_pages: int
    error: str | None
    rules_passed: int | None = None
    rules_total: int | None = None
    rules_failed: list[dict[str, str]] = field(default_factory=list)
    text_similarity: float | None = None
    text_reference: str | None = None
    teds: float | None = None
    teds_struct: float | None = None
    tables_truth: int | None = None
    tables_predicted: int | None = None
    lists: ListScore | None = None  # list structure against the Markdown ground truth's lists (lists.py)
    min_confidence: float | None = None  # the lowest page confidence the parser gave (None: it gives none)
    empty_pages: list[int] = field(default_factory=list)  # 1-based pages without a word whose truth has text
    warned_pages: dict[str, list[int]] = field(default_factory=dict)  # warning -> 1-based pages it was raised on

    @property
    def rule_pass_rate(self) -> float | None:
        return (self.rules_passed or 0) / self.rules_total if self.rules_total else None

    @property
    def failed(self) -> bool:
        return self.error is not None or self.failed_pages > 0

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["lists"] = self.lists.to_json() if self.lists else None
        data["rule_pass_rate"] = self.rule_pass_rate
        return data


def predicted_tables(markdown: str) -> list[str]:
    """The output's tables as HTML: its `<table>` elements, then its Markdown pipe tables converted."""
    tables = _HTML_TABLE.findall(markdown)
    rest = _HTML_TABLE.sub("\n", markdown)
    block: list[str] = []
    for line in [*rest.split("\n"), ""]:
        if line.strip().startswith("|") or (block and "|" in line):
            block.append(line)
            continue
        if len(block) >= 2:
            tables.append(_pipe_table_html(block))
        block = []
    return tables


def _pipe_table_html(lines: list[str]) -> str:
    rows = []
    for line in lines:
        body = line.strip()
        if set(body.replace("|", "").strip()) <= set("-: ") and "-" in body:
            continue  # the header rule
        cells = [c.strip() for c in body.strip("|").split("|")]
        rows.append("<tr>" + "".join(f"<td>{_escape(c)}</td>" for c in cells) + "</tr>")
    return "<table>" + "".join(rows) + "</table>"


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _page_health(score: CaseScore, case: Case, outcome: Outcome, rules: list[Rule]) -> None:
    """Lowest confidence, warnings per page, and the pages left without a word while the truth has text there:
    a page named by a rule that wants text, or any page of a case with a text or table reference (such a
    reference covers the whole document; a blank page in it is counted too, which errs on the loud side)."""
    known = [c for c in outcome.confidences if c is not None]
    score.min_confidence = round(min(known), 4) if known else None
    for number, page_warnings in enumerate(outcome.warnings, start=1):
        for warning in page_warnings:
            score.warned_pages.setdefault(warning, []).append(number)
    whole = case.text_reference() is not None or bool(case.table_references())
    wanted = {rule.page for rule in rules if rule.rule_type in _TEXT_RULES}
    for number, page in enumerate(outcome.pages, start=1):
        if (whole or number in wanted) and not _WORD.search(page):
            score.empty_pages.append(number)


def score_case(case: Case, outcome: Outcome, math: MathComparer) -> CaseScore:
    score = CaseScore(case_id=case.case_id, kinds=list(case.kinds), tier=case.tier, pages=case.page_count,
                      seconds=round(outcome.seconds, 4), failed_pages=outcome.failed_pages, error=outcome.error)
    markdown = outcome.markdown
    rules_path = case.rules_path
    rules = load_rules(rules_path) if rules_path is not None else []
    _page_health(score, case, outcome, rules)
    if rules_path is not None:
        results = []
        for rule in rules:
            # Rules name a page (1-based); a parser that returned one block for the document is checked whole.
            page = outcome.pages[rule.page - 1] if 0 < rule.page <= len(outcome.pages) else markdown
            results.append(rule.check(page, math))
        score.rules_total = len(results)
        score.rules_passed = sum(r.passed for r in results)
        score.rules_failed = [{"id": r.rule_id, "type": r.rule_type, "why": r.explanation}
                              for r in results if not r.passed]
    reference = case.text_reference()
    if reference is not None:
        text = reference.path.read_text(encoding="utf-8", errors="replace")
        score.text_reference = reference.path.name
        score.text_similarity = round(zoned_similarity(markdown, split_zones(text)) if reference.zones
                                      else similarity(markdown, text), 4)
    truth_lists = reference_lists(case.ground_truth, case.noisy)
    if truth_lists:
        score.lists = score_lists(markdown, truth_lists)
    truth_tables = case.table_references()
    if truth_tables:
        predicted = predicted_tables(markdown)
        matched = match_tables(predicted, truth_tables)
        score.teds, score.teds_struct = round(matched.teds, 4), round(matched.teds_struct, 4)
        score.tables_truth, score.tables_predicted = len(truth_tables), len(predicted)
    return score
