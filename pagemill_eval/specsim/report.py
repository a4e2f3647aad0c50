"""specsim's figures: pooled per anchor and kind, as a table, as JSON, and as a section of docs/benchmarks.md.

Pooled means generated tokens over verification steps summed over the pages, so a long page weighs by its
length, as it does in a GPU's throughput. A case with several kinds (`digital,table`) counts in each.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pagemill_eval import sections
from pagemill_eval.specsim.anchors import ORACLE_ANCHORS
from pagemill_eval.specsim.corpus import REFERENCE_FORMATS, reference_format
from pagemill_eval.specsim.misses import Misses, misses_table
from pagemill_eval.specsim.run import PageResult, SpecsimRun
from pagemill_eval.specsim.simulate import DecodeStats
from pagemill_eval.specsim.variants import NgramVariant, Variant, best_variant

# The kind the speculation goal is set on (issue 27): where the drafts of its pages are lost is reported apart.
MISSES_KIND = "digital"
TOP_PAGES = 3

START, END = "<!-- specsim:start -->", "<!-- specsim:end -->"


def pooled(pages: Iterable[PageResult], k: int, anchor: str) -> DecodeStats:
    total = DecodeStats()
    for page in pages:
        total.add(page.stats[k][anchor])
    return total


def kinds(run: SpecsimRun) -> list[str]:
    return sorted({kind for page in run.pages for kind in page.kinds})


def groups(run: SpecsimRun) -> list[tuple[str, list[PageResult]]]:
    return [("overall", run.pages)] + [(kind, [p for p in run.pages if kind in p.kinds]) for kind in kinds(run)]


def figures(pages: list[PageResult], k: int, anchor_names: Iterable[str]) -> dict[str, float]:
    return {name: round(pooled(pages, k, name).committed_per_step, 3) for name in anchor_names}


def to_json(run: SpecsimRun) -> dict[str, Any]:
    headline = run.ks[0]
    runs = []
    for k in run.ks:
        by_kind = {}
        for kind, pages in groups(run)[1:]:
            by_kind[kind] = {**figures(pages, k, run.anchors), "pages": len(pages),
                             "target_tokens": sum(p.target_tokens for p in pages)}
        acceptance = {}
        for name in run.anchors:
            total = pooled(run.pages, k, name)
            acceptance[name] = round(total.accepted / total.drafted, 3) if total.drafted else 0.0
        runs.append({
            "num_speculative_tokens": k, "prompt_lookup_min": run.lookup_min, "prompt_lookup_max": run.lookup_max,
            "overall": figures(run.pages, k, run.anchors), "by_kind": by_kind,
            "page_mean": {name: round(sum(p.stats[k][name].committed_per_step for p in run.pages)
                                      / max(1, len(run.pages)), 3) for name in run.anchors},
            "draft_acceptance_rate": acceptance,
            "suffix": {variant.name: {
                "history": variant.history, "ngram_fallback": variant.ngram_fallback,
                "overall": round(pooled(run.pages, k, variant.name).committed_per_step, 3),
                "by_kind": {kind: round(pooled(pages, k, variant.name).committed_per_step, 3)
                            for kind, pages in groups(run)[1:]},
                "vllm_config": None if variant.ngram_fallback else variant.vllm_config(k),
            } for variant in {v.name: v for v in [*run.variants, *run.sweep] if isinstance(v, Variant)}.values()},
            "ngram_lookup": {variant.name: {
                "prompt_lookup_min": variant.prompt_lookup_min, "prompt_lookup_max": variant.prompt_lookup_max,
                "overall": round(pooled(run.pages, k, variant.name).committed_per_step, 3),
                "by_kind": {kind: round(pooled(pages, k, variant.name).committed_per_step, 3)
                            for kind, pages in groups(run)[1:]},
            } for variant in run.sweep if isinstance(variant, NgramVariant)},
        })
    return {
        "overall": figures(run.pages, headline, run.anchors),
        "by_kind": {kind: figures(pages, headline, run.anchors) for kind, pages in groups(run)[1:]},
        "params": {"num_speculative_tokens": headline, "prompt_lookup_min": run.lookup_min,
                   "prompt_lookup_max": run.lookup_max, "anchor_max_chars": run.anchor_max_chars,
                   "tokenizer": f"pagemill byte-level BPE, {run.tokenizer_vocab} tokens",
                   "aggregation": "pooled: generated tokens / verification steps over all pages of the group"},
        "runs": runs,
        "pages": [{
            "case_id": p.case_id, "page": p.page_number, "kinds": list(p.kinds), "ground_truth": p.source,
            "scope": p.scope, "target_tokens": p.target_tokens, "anchor_chars": p.anchor_chars,
            "anchor_source": p.anchor_source, "reference_format": reference_format(p.source),
            "lost_steps": round(p.misses.lost_steps, 1),
            "committed_per_step": {str(k): {name: round(s.committed_per_step, 3) for name, s in by_anchor.items()}
                                   for k, by_anchor in p.stats.items()},
        } for p in run.pages],
        "skipped": [{"case_id": case_id, "reason": reason} for case_id, reason in run.skipped],
    }


def table(run: SpecsimRun, k: int, columns: Sequence[str] | None = None,
          headers: Sequence[str] | None = None) -> str:
    """Per kind: the pooled tokens per step of each column (an anchor under n-gram drafts, or a variant)."""
    columns = columns or run.anchors
    head = "| kind | pages | target tokens | " + " | ".join(headers or columns) + " |"
    rows = [head, "|" + "---|" * (3 + len(columns))]
    for kind, pages in groups(run):
        values = figures(pages, k, columns)
        label = f"**{kind}**" if kind == "overall" else kind
        rows.append(f"| {label} | {len(pages)} | {sum(p.target_tokens for p in pages)} | "
                    + " | ".join(f"{values[name]:.2f}" for name in columns) + " |")
    return "\n".join(rows)


def suffix_table(run: SpecsimRun, k: int) -> str:
    columns = ["engine", *(v.name for v in run.variants)]
    headers = ["n-gram", *(v.label for v in run.variants)]
    return table(run, k, columns, headers)


def tables(run: SpecsimRun) -> str:
    parts = []
    for k in run.ks:
        parts.append(f"num_speculative_tokens {k}, prompt_lookup_min {run.lookup_min}, "
                     f"prompt_lookup_max {run.lookup_max} — mean tokens committed per verification step:\n\n"
                     + table(run, k))
    if run.variants:
        knobs = run.variants[0].params
        parts.append(f"Suffix decoding on the engine anchor's prompt (max_tree_depth {knobs.max_tree_depth}, "
                     f"max_spec_factor {knobs.max_spec_factor:g}, min_token_prob {knobs.min_token_prob:g}) "
                     "beside n-gram drafts on the same prompt:")
        parts += [f"num_speculative_tokens {k}:\n\n{suffix_table(run, k)}" for k in run.ks]
    return "\n\n".join(parts)


def misses_section(run: SpecsimRun, kind: str = MISSES_KIND) -> str:
    """Where the engine anchor's n-gram drafts are lost on the pages of `kind`: by the form of the reference
    (the oracle's output), then by the first rejected token of each short step."""
    pages = [p for p in run.pages if kind in p.kinds]
    if not pages:
        return ""
    k = run.ks[0]
    total = Misses()
    for page in pages:
        total.add(page.misses)
    lost = total.lost_steps or 1.0
    rows = ["| reference | pages | target tokens | tokens per step | lost steps | share of lost steps |",
            "|---|---|---|---|---|---|"]
    for name in [*(name for name, _ in REFERENCE_FORMATS), "other"]:
        group = [p for p in pages if reference_format(p.source) == name]
        if group:
            steps_lost = sum(p.misses.lost_steps for p in group)
            rows.append(f"| {name} | {len(group)} | {sum(p.target_tokens for p in group)} | "
                        f"{pooled(group, k, 'engine').committed_per_step:.2f} | {steps_lost:.0f} | "
                        f"{steps_lost / lost:.0%} |")
    intro = (f"Where the drafts of the {kind} pages are lost (engine anchor, n-gram {run.lookup_min}.."
             f"{run.lookup_max}, num_speculative_tokens {k}; lost steps: steps beyond target tokens / (k + 1)), by "
             "the form of the reference:")
    causes = ("Short steps (fewer than k draft tokens accepted) by the first rejected token; novel: the target's "
              "next 4 tokens are nowhere in the prompt, misplaced: they are, but the n-gram matched another place:")
    worst = sorted(pages, key=lambda p: p.misses.lost_steps, reverse=True)[:TOP_PAGES]
    most = "; ".join(f"`{p.case_id}` p{p.page_number} ({reference_format(p.source)}, {p.target_tokens} tokens, "
                     f"{pooled([p], k, 'engine').committed_per_step:.2f} per step): {p.misses.lost_steps / lost:.0%}"
                     for p in worst)
    return (f"{intro}\n\n" + "\n".join(rows) + f"\n\nThe pages that lose the most steps: {most}.\n\n{causes}\n\n"
            f"{misses_table(total)}")


def ceiling_section(run: SpecsimRun, kind: str = MISSES_KIND) -> str:
    """What an anchor could reach on the pages of `kind`, by the form of the reference: the engine's anchor beside
    the oracle anchors, and the bound of a reading with every word right in the markup the engine writes."""
    oracles = [name for name in ORACLE_ANCHORS if name in run.anchors]
    pages = [p for p in run.pages if kind in p.kinds]
    if not oracles or not pages:
        return ""
    columns = ["engine", *oracles]
    rows = ["| reference | pages | target tokens | k | " + " | ".join(columns) + " |",
            "|" + "---|" * (4 + len(columns))]
    for name in [*(name for name, _ in REFERENCE_FORMATS), "other"]:
        group = [p for p in pages if reference_format(p.source) == name]
        for k in run.ks[:2] if group else ():
            rows.append(f"| {name} | {len(group)} | {sum(p.target_tokens for p in group)} | {k} | "
                        + " | ".join(f"{pooled(group, k, column).committed_per_step:.2f}" for column in columns) + " |")
    totals = " | ".join(f"{pooled(pages, run.ks[0], column).committed_per_step:.2f}" for column in columns)
    intro = (f"What an anchor could reach on the {kind} pages (n-gram {run.lookup_min}..{run.lookup_max}), by the "
             "form of the reference; the oracle anchors are made from the reference itself and clipped to the same "
             "budget:")
    parts = [f"{intro}\n\n" + "\n".join(rows)]
    parts.append(f"All {len(pages)} {kind} pages, at k = {run.ks[0]}: " + totals.replace(" | ", " / ")
                 + f" ({', '.join(columns)}).")
    if "reference_markup" in oracles:
        bound = " / ".join(f"{_markup_bound(pages, k).committed_per_step:.2f}" for k in run.ks[:2])
        ks = " / ".join(str(k) for k in run.ks[:2])
        parts.append(f"A reading with every word right in the engine's markup, at most (k = {ks}): **{bound}** — each "
                     "page's better of `engine` and `reference_markup`, but `engine` where the reference is LaTeX "
                     "source, which no anchor in the prompt's markup (Markdown, HTML tables, `$…$`) can be.")
    return "\n\n".join(parts)


def _markup_bound(pages: Iterable[PageResult], k: int) -> DecodeStats:
    total = DecodeStats()
    for page in pages:
        names = ["engine"] if reference_format(page.source) == "LaTeX source" else ["engine", "reference_markup"]
        total.add(max((page.stats[k][name] for name in names), key=lambda stats: stats.committed_per_step))
    return total


def sweep_table(runs: list[tuple[str, SpecsimRun]], kinds: Sequence[str] = ("overall", "digital")) -> str:
    """One row per swept variant: its pooled figure per corpus, draft length (the first two) and kind."""
    first = runs[0][1]
    ks = first.ks[:2]
    columns = [(name, run, k, kind) for name, run in runs for k in ks for kind in kinds]
    rows = ["| variant | " + " | ".join(f"{name} k{k} {kind}" for name, _, k, kind in columns) + " |",
            "|" + "---|" * (1 + len(columns))]
    for variant in first.sweep:
        cells = []
        for _, run, k, kind in columns:
            pages = run.pages if kind == "overall" else [p for p in run.pages if kind in p.kinds]
            cells.append(f"{pooled(pages, k, variant.name).committed_per_step:.2f}")
        rows.append(f"| {variant.name} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def markdown_section(runs: list[tuple[str, SpecsimRun]], command: str) -> str:
    """The docs section: how the figures are made, then each corpus's tables."""
    first = runs[0][1]
    parts = []
    for name, run in runs:
        skipped = "; ".join(f"`{case_id}`" for case_id, _ in run.skipped) or "none"
        text_layer_pages = sum(1 for p in run.pages if p.anchor_source == "text_layer")
        parts.append(f"### {name}\n\n{len(run.pages)} pages; the engine's anchor is its laid-out text layer on "
                     f"{text_layer_pages} of them, its OCR on the others. Skipped, having no page-level reference "
                     f"(olmOCR-bench rules only, no reference, or a multi-page reference without page boundaries): "
                     f"{skipped}.\n\n{tables(run)}" + (f"\n\n{misses}" if (misses := misses_section(run)) else "")
                     + (f"\n\n{ceiling}" if (ceiling := ceiling_section(run)) else ""))
    return f"""{START}
## Anchor-guided speculation (`pagemill specsim`)

Made with `{command}`.

Each page with a page-level reference is decoded by an oracle model that emits the reference (then
`<|im_end|>`). The prompt is the chat template with the page image, a fixed instruction and an anchor:
**none**, the page's raw **text_layer** (pypdfium2; empty for images), the cpu engine's **ocr** of the rendered
page, or **engine**: the anchor the vllm engine sends, made by the engine's own function
(`services/worker/pipeline/page.py` `page_anchor`) — the cpu engine's reading of the page, its Markdown of the text
layer when it trusts it (reading order, headings, tables as the model writes them), its OCR otherwise. Two
oracles, never sent, say what an anchor could reach: **reference**, the page's reference itself, and
**reference_markup**, the reference with its HTML tables in the engine's markup (tag attributes dropped but
rowspan and colspan, no whitespace between tags): the same words, in the markup the anchor can have. Anchors
are clipped to {first.anchor_max_chars} characters, head kept. Drafts come from vLLM's n-gram proposer over
prompt + generated tokens (longest n-gram from max down to min, earliest occurrence, up to
`num_speculative_tokens` tokens) with the engine's defaults (`PAGEMILL_ENGINE__SERVE__PROMPT_LOOKUP_MIN`/`MAX`);
verification is greedy: the accepted prefix plus one bonus token per step, and the prefill step commits the
first token. Tokens: pagemill's byte-level BPE ({first.tokenizer_vocab} tokens, Qwen2 pre-tokenization, trained
on committed neutral text: `pagemill_eval/tokenizer.py`), which splits words finer than a production
tokenizer. A figure is the tokens over the steps of all pages of its row; a case counts under each of its
kinds.

Suffix decoding (vLLM's `suffix` method, `pagemill_eval/specsim/suffix.py`) drafts for the engine anchor's prompt
from two suffix trees, the request's own (prompt, then output) and a global one of earlier requests' outputs;
its **history** is what that global tree holds: **no history** (`suffix_decoding_max_cached_requests` 0),
**document** (the earlier pages of the same document, decoded one after the other: the figure for a document
nobody has seen) or **corpus** (every earlier page of the corpus, as a long-running server's cache holds them).
**suffix + n-gram** takes the n-gram draft where the trees have none, a combination vLLM 0.32 cannot serve.

References, first usable per case: Markdown (docling's, cut into pages by its DoclingDocument JSON; olmOCR's
front matter dropped) → derived HTML tables (PubTabNet crops: the whole image; ICDAR pages: only their tables)
→ plain text (spaces collapsed) → LaTeX source body (comments and TikZ removed).

{chr(10).join(chr(10) + part for part in parts).strip()}{sweep_section(runs)}
{END}"""


def sweep_section(runs: list[tuple[str, SpecsimRun]]) -> str:
    if not runs[0][1].sweep:
        return ""
    first_run = runs[0][1]
    served = first_run.variants[0].params if first_run.variants else None
    chosen = (f" The engine serves max_tree_depth {served.max_tree_depth}, max_spec_factor "
              f"{served.max_spec_factor:g}, min_token_prob {served.min_token_prob:g} (`SUFFIX_DECODING`, "
              "`services/worker/engines/vllm/serve.py`).") if served else ""
    return (f"\n\n### Suffix parameters and n-gram lookup lengths\n\nvLLM's suffix knobs (d: max_tree_depth, f: "
            f"max_spec_factor, p: min_token_prob) at document history, and its n-gram proposer with other lookup "
            f"lengths (min..max), both on the engine anchor's prompt; pooled tokens per step, tuned on the first "
            f"corpus, the others held out.{chosen} The engine's n-gram default is "
            f"{first_run.lookup_min}..{first_run.lookup_max} (`PAGEMILL_ENGINE__SERVE__PROMPT_LOOKUP_MIN`/`MAX`)."
            f"\n\n{sweep_table(runs)}\n\n{tuned_lines(runs)}")


def tuned_lines(runs: list[tuple[str, SpecsimRun]]) -> str:
    """Each corpus in turn as the tuning set: its best n-gram lengths and suffix knobs (summed over the draft
    lengths, all its pages), and what they give on the other corpora's digital pages."""
    lines = []
    for name, run in runs:
        for label, family in (("n-gram", NgramVariant), ("suffix", Variant)):
            candidates = [v for v in run.sweep if isinstance(v, family)]
            if not candidates:
                continue
            best = best_variant(run.pages, candidates, run.ks)
            held_out = "; ".join(f"{other} {MISSES_KIND} " + " / ".join(
                f"{pooled(_of_kind(other_run, MISSES_KIND), k, best.name).committed_per_step:.2f}"
                for k in other_run.ks[:2]) for other, other_run in runs if other != name)
            lines.append(f"- tuned on {name}, best {label}: **{best.name}**" + (f"; held out: {held_out}" if held_out
                                                                                   else ""))
    ks = " / ".join(f"k = {k}" for k in runs[0][1].ks[:2])
    return f"Each corpus as the tuning set (held-out figures at {ks}):\n\n" + "\n".join(lines)


def write_section(path: Path, section: str) -> None:
    """Puts the section between the specsim markers, leaving the rest of the file as it is."""
    sections.write_section(path, section, "specsim")


def _of_kind(run: SpecsimRun, kind: str) -> list[PageResult]:
    return [p for p in run.pages if kind in p.kinds]
