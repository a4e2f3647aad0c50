"""olmOCR-bench rules: each type passes on output that satisfies it and fails on output that does not."""

from __future__ import annotations

from typing import Any

import pytest

from pagemill_eval.math_render import KatexRenderer, MathComparer, default_comparer
from pagemill_eval.olmocr_rules import Rule, ending_repeats, equations, normalize_text

FALLBACK = MathComparer(None)


def check(content: str, comparer: MathComparer = FALLBACK, **data: Any) -> bool:
    rule = Rule({"pdf": "x.pdf", "page": 1, "id": "t", **data})
    return rule.check(content, comparer).passed


PAGE = "# Results\n\nThe **quick** brown fox \u2014 jumps over the lazy dog.\n\nPage 7"


def test_normalization_matches_the_published_one() -> None:
    assert normalize_text("a<br>b  **c**\u2019s \u201cd\u201d \u2013 _e_") == "a b c's \"d\" - e"


@pytest.mark.parametrize(("data", "passed"), [
    ({"type": "present", "text": "The quick brown fox - jumps"}, True),  # bold and the em dash normalized
    ({"type": "present", "text": "the quick brown fox"}, False),  # case-sensitive by default
    ({"type": "present", "text": "the quick brown fox", "case_sensitive": False}, True),
    ({"type": "present", "text": "The quick brown cat"}, False),
    ({"type": "present", "text": "The quick brown cat", "max_diffs": 3}, True),  # 'fox' -> 'cat' is 3 edits
    ({"type": "present", "text": "Page 7", "last_n": 10}, True),
    ({"type": "present", "text": "Page 7", "first_n": 10}, False),
    ({"type": "absent", "text": "Page 7"}, False),
    ({"type": "absent", "text": "Page 7", "first_n": 20}, True),
    ({"type": "absent", "text": "Chapter 12"}, True),
])
def test_presence_and_absence(data: dict[str, Any], passed: bool) -> None:
    assert check(PAGE, **data) is passed


def test_present_fails_on_an_empty_page() -> None:
    # partial_ratio alone would score a lone space inside the query as a perfect match
    assert not check(" \n", type="present", text="a b")
    assert check(" \n", type="absent", text="a b")


@pytest.mark.parametrize(("data", "passed"), [
    ({"before": "Results", "after": "lazy dog"}, True),
    ({"before": "lazy dog", "after": "Results"}, False),
    ({"before": "Results", "after": "lazy cat"}, False),  # 'after' not found
    ({"before": "Results", "after": "lazy cat", "max_diffs": 3}, True),
])
def test_order(data: dict[str, Any], passed: bool) -> None:
    assert check(PAGE, type="order", **data) is passed


MARKDOWN_TABLE = """
| Year | Revenue | Profit |
|------|---------|--------|
| 2022 | 10.5    | 1.2    |
| 2023 | 12.0    | 2.4    |
"""

HTML_TABLE = """<table>
<thead><tr><th rowspan="2">Region</th><th colspan="2">Sales</th></tr>
<tr><th>Q1</th><th>Q2</th></tr></thead>
<tbody><tr><td>North</td><td>4.5%</td><td>2.4%</td></tr>
<tr><td>South</td><td>3.1%</td><td>9.9%</td></tr></tbody>
</table>"""


@pytest.mark.parametrize(("content", "data", "passed"), [
    (MARKDOWN_TABLE, {"cell": "12.0", "up": "10.5", "left": "2023", "right": "2.4"}, True),
    (MARKDOWN_TABLE, {"cell": "12.0", "top_heading": "Revenue", "left_heading": "2023"}, True),
    (MARKDOWN_TABLE, {"cell": "12.0", "down": "10.5"}, False),
    (MARKDOWN_TABLE, {"cell": "12.0", "top_heading": "Profit"}, False),
    (MARKDOWN_TABLE, {"cell": "99.9"}, False),
    (HTML_TABLE, {"cell": "4.5%", "up": "Q1", "top_heading": "Sales", "left_heading": "North"}, True),
    (HTML_TABLE, {"cell": "2.4%", "top_heading": "Sales", "left": "4.5%", "down": "9.9%"}, True),
    (HTML_TABLE, {"cell": "Q2", "up": "Sales"}, True),  # a colspan cell is above both of the cells it spans
    (HTML_TABLE, {"cell": "South", "up": "North", "top_heading": "Region"}, True),  # rowspan heading
    (HTML_TABLE, {"cell": "3.1%", "top_heading": "Q2"}, False),
    ("no table here", {"cell": "4.5%"}, False),
])
def test_table_relations(content: str, data: dict[str, Any], passed: bool) -> None:
    assert check(content, type="table", **data) is passed


def test_equations_are_found_by_every_delimiter() -> None:
    content = r"a \(x+1\) b \[y^2\] c $$\frac{1}{2}$$ d $z$"
    assert equations(content) == ["x+1", "y^2", r"\frac{1}{2}", "z"]


COMPARERS = [pytest.param(FALLBACK, id="python-fallback")]
if KatexRenderer.available():
    COMPARERS.append(pytest.param(default_comparer(), id="katex"))


@pytest.mark.parametrize("math", COMPARERS)
@pytest.mark.parametrize(("content", "latex", "passed"), [
    (r"so $x^2 + y^2 = z^2$ holds", "x^2 + y^2 = z^2", True),  # the same string
    (r"so \[x^{2}+y^{2}=z^{2}\] holds", "x^2 + y^2 = z^2", True),  # renders the same
    (r"so $$\int_a^b f(x)\,dx = F(b) - F(a)$$", r"\int_a^b f(x)\,dx", True),  # contained in a larger one
    (r"so $x^3 + y^2 = z^2$", "x^2 + y^2 = z^2", False),
    ("x^2 + y^2 = z^2 without delimiters", "x^2 + y^2 = z^2", False),
])
def test_math(math: MathComparer, content: str, latex: str, passed: bool) -> None:
    assert check(content, math, type="math", math=latex) is passed


def test_repeats_at_the_end_are_counted() -> None:
    assert ending_repeats("xyzabab", 2) == [1, 2]
    assert ending_repeats("a" * 40, 1) == [40]


@pytest.mark.parametrize(("content", "data", "passed"), [
    ("", {"max_length": 10}, True),
    ("- 12 -", {"max_length": 10}, True),
    ("This page has words on it.", {"max_length": 10}, False),
    ("Ordinary text.", {}, True),
    ("", {}, False),
    ("text " + "ab" * 40, {}, False),  # ends in 40 repetitions of a 2-gram
    ("text \u4e2d\u6587", {}, False),  # CJK characters are not allowed on these pages
])
def test_baseline(content: str, data: dict[str, Any], passed: bool) -> None:
    assert check(content, type="baseline", **data) is passed
