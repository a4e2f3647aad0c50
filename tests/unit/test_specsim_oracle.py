"""specsim's oracle anchors: the reference itself, and its tables in the engine's markup; the ceiling they give."""

from __future__ import annotations

from pathlib import Path

import pytest

from pagemill_eval.specsim.anchors import engine_markup, oracle_anchor, prompt_text
from pagemill_eval.specsim.lookup import LookupParams
from pagemill_eval.specsim.report import ceiling_section
from pagemill_eval.specsim.run import PageResult, SpecsimRun
from pagemill_eval.specsim.simulate import DecodeStats, simulate
from pagemill_eval.tokenizer import EOS, load_tokenizer

TABLE = ('<table>\n<thead>\n<tr>\n<th rowspan="2">Country<br/>Pays</th>\n<th class="header" colspan="2">Population'
         '</th>\n</tr>\n</thead>\n<tbody>\n<tr>\n<td class="data">33 003</td>\n<td class="data">33 461</td>\n</tr>\n'
         '</tbody>\n</table>')


def test_engine_markup_keeps_the_words_and_spans_and_drops_the_rest_of_the_markup() -> None:
    assert engine_markup(TABLE) == ('<table><thead><tr><th rowspan="2">Country<br/>Pays</th><th colspan="2">'
                                    'Population</th></tr></thead><tbody><tr><td>33 003</td><td>33 461</td></tr>'
                                    '</tbody></table>')
    markdown = "# Title\n\nA paragraph with 3 < 4 and a [link](x).\n\n| a | b |\n| - | - |"
    assert engine_markup(markdown) == markdown  # no tag: nothing to change
    assert oracle_anchor("reference", TABLE) == TABLE
    assert oracle_anchor("reference_markup", TABLE) == engine_markup(TABLE)
    with pytest.raises(ValueError, match="not an oracle anchor"):
        oracle_anchor("engine", TABLE)


def test_the_reference_as_anchor_drafts_nearly_every_token() -> None:
    tokenizer = load_tokenizer()

    def encode(text: str) -> list[int]:
        return list(tokenizer.encode(text, add_special_tokens=False).ids)

    reference = ("The committee approved the annual report after a long debate about the budget of the coming "
                 "year, the new members and the schedule of the meetings. ") * 3
    target = [*encode(reference), tokenizer.token_to_id(EOS)]
    params = LookupParams(num_speculative_tokens=4, prompt_lookup_min=1, prompt_lookup_max=32)
    with_reference = simulate(encode(prompt_text(reference)), target, params)
    without = simulate(encode(prompt_text(None)), target, params)
    assert with_reference.committed_per_step > 4.0 > without.committed_per_step


def page(case_id: str, source: str, figures: dict[str, tuple[int, int]]) -> PageResult:
    """A page whose anchors committed (tokens, steps) at k = 4."""
    tokens = {figure[0] for figure in figures.values()}.pop()
    stats = {name: DecodeStats(generated=generated, steps=steps) for name, (generated, steps) in figures.items()}
    return PageResult(case_id, 1, ("digital",), source, "page", tokens, {}, "text_layer", stats={4: stats})


def test_the_ceiling_takes_the_engine_anchor_where_the_reference_is_latex_source(tmp_path: Path) -> None:
    run = SpecsimRun(1, 32, (4,), 6000, 100, anchors=("engine", "reference", "reference_markup"))
    run.pages = [page("a", "a.md", {"engine": (100, 40), "reference": (100, 20), "reference_markup": (100, 25)}),
                 page("b", "b.md", {"engine": (100, 30), "reference": (100, 20), "reference_markup": (100, 50)}),
                 page("c", "c.tex", {"engine": (100, 50), "reference": (100, 20), "reference_markup": (100, 20)})]
    section = ceiling_section(run)
    assert "| Markdown | 2 | 200 | 4 | 2.86 | 5.00 | 2.67 |" in section
    assert "| LaTeX source | 1 | 100 | 4 | 2.00 | 5.00 | 5.00 |" in section
    # a: reference_markup (25 steps), b: engine (30), c: engine (50) although its reference_markup drafts better
    assert f"**{300 / 105:.2f}**" in section
    run.anchors = ("none", "engine")
    assert ceiling_section(run) == ""
