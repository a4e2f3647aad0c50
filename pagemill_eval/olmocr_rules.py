"""olmOCR-bench unit-test rules (`*.olmocr_tests.jsonl`), checked against one page's Markdown.

The semantics follow allenai/olmocr `olmocr/bench/tests.py` (see docs/evaluation.md for the few deviations):
- text is normalized first: `<br>` to a space, bold/italic markers and <b>/<i> removed, whitespace collapsed,
  NFC, fancy quotes/dashes to ASCII, micro sign to mu;
- present/absent: rapidfuzz `partial_ratio` of the rule text against the page (only its first_n / last_n
  characters when given) must reach / stay under 1 - max_diffs / len(text); case-insensitive on request;
- order: both texts found within max_diffs Levenshtein edits (fuzzysearch) with some `before` match starting
  before some `after` match;
- table: a cell of some Markdown or HTML table matches (`ratio` >= max(0.5, 1 - max_diffs / len)) and its
  up/down/left/right neighbours and top/left headings match the rule's texts the same way;
- math: an equation delimited by \\( \\), \\[ \\], $$ $$ or $ $ equals the rule's LaTeX, or renders the same;
- baseline: a blank-page rule passes when at most max_length alphanumerics were written; otherwise the page
  must have some alphanumerics, no run of more than 30 repeated n-grams (n <= 5) at its end, and no CJK or
  emoji characters.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fuzzysearch import find_near_matches
from rapidfuzz import fuzz

from pagemill_eval.math_render import MathComparer
from pagemill_eval.olmocr_tables import TableGraph, html_tables, markdown_tables

_REPLACEMENTS = str.maketrans({
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201c": '"', "\u201d": '"', "\u201e": '"', "\uff3f": "_",
    "\u2013": "-", "\u2014": "-", "\u2011": "-", "\u2012": "-", "\u2212": "-", "\u00b5": "\u03bc",
})
_DISALLOWED = re.compile("[\u4e00-\u9fff\u3040-\u309f\u30a0-\u30ff\U0001f600-\U0001f64f\U0001f300-\U0001f5ff"
                         "\U0001f680-\U0001f6ff\U0001f1e0-\U0001f1ff]")
_EQUATIONS = (r"\\\((.+?)\\\)", r"\\\[(.+?)\\\]", r"\$\$(.+?)\$\$", r"\$(.+?)\$")
RULE_TYPES = ("present", "absent", "order", "table", "math", "baseline")


def normalize_text(text: str) -> str:
    text = re.sub(r"<br/?>", " ", text)
    text = re.sub(r"\*\*(.*?)\*\*", r"\1", text)
    text = re.sub(r"__(.*?)__", r"\1", text)
    text = re.sub(r"</?b>", "", text)
    text = re.sub(r"</?i>", "", text)
    text = re.sub(r"(\*\*|__)(.*?)\1", r"\2", text)
    text = re.sub(r"(\*|_)(.*?)\1", r"\2", text)
    text = re.sub(r"\s+", " ", text)
    return unicodedata.normalize("NFC", text).translate(_REPLACEMENTS)


@dataclass(frozen=True, slots=True)
class RuleResult:
    rule_id: str
    rule_type: str
    passed: bool
    explanation: str = ""


@dataclass(frozen=True, slots=True)
class Rule:
    data: dict[str, Any]

    @property
    def rule_id(self) -> str:
        return str(self.data.get("id", ""))

    @property
    def rule_type(self) -> str:
        return str(self.data.get("type", ""))

    @property
    def page(self) -> int:
        return int(self.data.get("page", 1))

    @property
    def max_diffs(self) -> int:
        return int(self.data.get("max_diffs", 0) or 0)

    def check(self, page_markdown: str, math: MathComparer) -> RuleResult:
        checker: Callable[[Rule, str, MathComparer], tuple[bool, str]] = _CHECKERS[self.rule_type]
        passed, why = checker(self, page_markdown, math)
        return RuleResult(self.rule_id, self.rule_type, passed, why)


def load_rules(path: Path) -> list[Rule]:
    """Every rule of a JSONL file, except those a reviewer marked `checked: rejected`."""
    rules = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        data = json.loads(line)
        if data.get("checked") == "rejected":
            continue
        if data.get("type") not in RULE_TYPES:
            raise ValueError(f"{path.name}: rule {data.get('id')!r} has unsupported type {data.get('type')!r}")
        rules.append(Rule(data))
    return rules


def _threshold(text: str, max_diffs: int) -> float:
    return 1.0 - max_diffs / (len(text) if text else 1)


def _presence(rule: Rule, content: str, _: MathComparer) -> tuple[bool, str]:
    query = normalize_text(str(rule.data["text"]))
    content = normalize_text(content)
    if not rule.data.get("case_sensitive", True):
        query, content = query.lower(), content.lower()
    first_n, last_n = rule.data.get("first_n"), rule.data.get("last_n")
    if first_n and last_n:
        content = content[:first_n] + content[-last_n:]
    elif first_n:
        content = content[:first_n]
    elif last_n:
        content = content[-last_n:]
    present = rule.rule_type == "present"
    # partial_ratio scales by the shorter string: an (almost) empty page would "contain" any query.
    if len(content) < len(query) - rule.max_diffs:
        return (False, "page too short to contain the text") if present else (True, "")
    threshold = _threshold(query, rule.max_diffs)
    ratio = fuzz.partial_ratio(query, content) / 100.0
    if present:
        return ratio >= threshold, "" if ratio >= threshold else f"best match {ratio:.3f} < {threshold:.3f}"
    return ratio < threshold, "" if ratio < threshold else f"found (match {ratio:.3f} >= {threshold:.3f})"


def _order(rule: Rule, content: str, _: MathComparer) -> tuple[bool, str]:
    content = normalize_text(content)
    before, after = normalize_text(str(rule.data["before"])), normalize_text(str(rule.data["after"]))
    before_matches = find_near_matches(before, content, max_l_dist=rule.max_diffs)
    after_matches = find_near_matches(after, content, max_l_dist=rule.max_diffs)
    if not before_matches:
        return False, "'before' text not found"
    if not after_matches:
        return False, "'after' text not found"
    if min(m.start for m in before_matches) < max(m.start for m in after_matches):
        return True, ""
    return False, "'before' text comes after the 'after' text"


_RELATIONS: dict[str, Callable[[TableGraph, tuple[int, int]], set[tuple[int, int]]]] = {
    "up": lambda g, p: g.up.get(p, set()),
    "down": lambda g, p: g.down.get(p, set()),
    "left": lambda g, p: g.left.get(p, set()),
    "right": lambda g, p: g.right.get(p, set()),
    "top_heading": lambda g, p: g.top_headings(p),
    "left_heading": lambda g, p: g.left_headings(p),
}


def _table(rule: Rule, content: str, _: MathComparer) -> tuple[bool, str]:
    cell = normalize_text(str(rule.data["cell"]))
    tables = ([] if rule.data.get("ignore_markdown_tables") else markdown_tables(content)) + html_tables(content)
    if not tables:
        return False, "no table in the page"
    wanted = {name: normalize_text(str(rule.data[name])) for name in _RELATIONS if rule.data.get(name)}

    def matches(expected: str, text: str) -> bool:
        return fuzz.ratio(expected, normalize_text(text)) / 100.0 >= max(0.5, _threshold(expected, rule.max_diffs))

    found_cell = False
    for table in tables:
        for position, text in table.cell_text.items():
            if not matches(cell, text):
                continue
            found_cell = True
            if all(any(matches(expected, table.cell_text[other]) for other in _RELATIONS[name](table, position))
                   for name, expected in wanted.items()):
                return True, ""
    return False, "cell found but its neighbours differ" if found_cell else "no matching cell"


def equations(content: str) -> list[str]:
    found: list[str] = []
    for pattern in _EQUATIONS:
        found.extend(m.strip() for m in re.findall(pattern, content, re.DOTALL))
        content = re.sub(pattern, "", content, flags=re.DOTALL)
    return found


def _math(rule: Rule, content: str, math: MathComparer) -> tuple[bool, str]:
    reference = str(rule.data["math"])
    candidates = equations(content)
    if reference in candidates:
        return True, ""
    if not math.renders(reference):
        return False, "the rule's equation does not render"
    for candidate in sorted(candidates, key=lambda c: -fuzz.ratio(c, reference)):
        if math.same(reference, candidate):
            return True, ""
    return False, f"no equation renders like it ({len(candidates)} on the page)"


def ending_repeats(text: str, max_ngram: int = 5) -> list[int]:
    """For n = 1..max_ngram, how many times the text's last n characters repeat back to back at its end."""
    counts = []
    for n in range(1, max_ngram + 1):
        if len(text) < n:
            counts.append(0)
            continue
        tail, count, end = text[-n:], 0, len(text)
        while end - n >= 0 and text[end - n:end] == tail:
            count += 1
            end -= n
        counts.append(count)
    return counts


def _baseline(rule: Rule, content: str, _: MathComparer) -> tuple[bool, str]:
    alnum = sum(1 for ch in content if ch.isalnum())
    max_length = rule.data.get("max_length")
    if max_length is not None:
        checked = content
        if rule.data.get("max_length_skips_image_alt_tags"):
            checked = re.sub(r"!\[.*?\]\(.*?\)", "", content)
            alnum = sum(1 for ch in checked if ch.isalnum())
        return alnum <= int(max_length), "" if alnum <= int(max_length) else f"{alnum} characters on a blank page"
    if alnum == 0:
        return False, "no alphanumeric characters"
    limit = int(rule.data.get("max_repeats", 30))
    letters = "".join(ch for ch in content if not ch.isspace())
    if any(count > limit for count in ending_repeats(letters)):
        return False, "the page ends in a long repetition"
    if rule.data.get("check_disallowed_characters", True) and _DISALLOWED.search(content):
        return False, "disallowed characters"
    return True, ""


_CHECKERS: dict[str, Callable[[Rule, str, MathComparer], tuple[bool, str]]] = {
    "present": _presence, "absent": _presence, "order": _order, "table": _table, "math": _math,
    "baseline": _baseline,
}
