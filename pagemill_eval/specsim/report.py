"""specsim's figures: pooled per anchor and kind, as a table, as JSON, and as a section of docs/benchmarks.md.

Pooled means generated tokens over verification steps summed over the pages, so a long page weighs by its
length, as it does in a GPU's throughput. A case with several kinds (`digital,table`) counts in each.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pagemill_eval import sections
from pagemill_eval.specsim.run import MEASURED_ANCHORS, PageResult, SpecsimRun
from pagemill_eval.specsim.simulate import DecodeStats

START, END = "<!-- specsim:start -->", "<!-- specsim:end -->"
HEADLINE_ANCHORS = ("none", "text_layer", "ocr", "engine")


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
            by_kind[kind] = {**figures(pages, k, MEASURED_ANCHORS), "pages": len(pages),
                             "target_tokens": sum(p.target_tokens for p in pages)}
        acceptance = {}
        for name in MEASURED_ANCHORS:
            total = pooled(run.pages, k, name)
            acceptance[name] = round(total.accepted / total.drafted, 3) if total.drafted else 0.0
        runs.append({
            "num_speculative_tokens": k, "prompt_lookup_min": run.lookup_min, "prompt_lookup_max": run.lookup_max,
            "overall": figures(run.pages, k, MEASURED_ANCHORS), "by_kind": by_kind,
            "page_mean": {name: round(sum(p.stats[k][name].committed_per_step for p in run.pages)
                                      / max(1, len(run.pages)), 3) for name in MEASURED_ANCHORS},
            "draft_acceptance_rate": acceptance,
        })
    return {
        "overall": figures(run.pages, headline, HEADLINE_ANCHORS),
        "by_kind": {kind: figures(pages, headline, HEADLINE_ANCHORS) for kind, pages in groups(run)[1:]},
        "params": {"num_speculative_tokens": headline, "prompt_lookup_min": run.lookup_min,
                   "prompt_lookup_max": run.lookup_max, "anchor_max_chars": run.anchor_max_chars,
                   "tokenizer": f"pagemill byte-level BPE, {run.tokenizer_vocab} tokens",
                   "aggregation": "pooled: generated tokens / verification steps over all pages of the group"},
        "runs": runs,
        "pages": [{
            "case_id": p.case_id, "page": p.page_number, "kinds": list(p.kinds), "ground_truth": p.source,
            "scope": p.scope, "target_tokens": p.target_tokens, "anchor_chars": p.anchor_chars,
            "anchor_source": p.anchor_source,
            "committed_per_step": {str(k): {name: round(s.committed_per_step, 3) for name, s in by_anchor.items()}
                                   for k, by_anchor in p.stats.items()},
        } for p in run.pages],
        "skipped": [{"case_id": case_id, "reason": reason} for case_id, reason in run.skipped],
    }


def table(run: SpecsimRun, k: int) -> str:
    head = "| kind | pages | target tokens | " + " | ".join(MEASURED_ANCHORS) + " |"
    rows = [head, "|" + "---|" * (3 + len(MEASURED_ANCHORS))]
    for kind, pages in groups(run):
        values = figures(pages, k, MEASURED_ANCHORS)
        label = f"**{kind}**" if kind == "overall" else kind
        rows.append(f"| {label} | {len(pages)} | {sum(p.target_tokens for p in pages)} | "
                    + " | ".join(f"{values[name]:.2f}" for name in MEASURED_ANCHORS) + " |")
    return "\n".join(rows)


def tables(run: SpecsimRun) -> str:
    parts = []
    for k in run.ks:
        parts.append(f"num_speculative_tokens {k}, prompt_lookup_min {run.lookup_min}, "
                     f"prompt_lookup_max {run.lookup_max} — mean tokens committed per verification step:\n\n"
                     + table(run, k))
    return "\n\n".join(parts)


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
                     f"{skipped}.\n\n{tables(run)}")
    return f"""{START}
## Anchor-guided speculation (`pagemill specsim`)

Made with `{command}`.

Each page with a page-level reference is decoded by an oracle model that emits the reference (then
`<|im_end|>`). The prompt is the chat template with the page image, a fixed instruction and an anchor:
**none**, the page's raw **text_layer** (pypdfium2; empty for images), the cpu engine's **ocr** of the rendered
page, or **engine**: the anchor the vllm engine sends, made by the engine's own function
(`services/worker/pipeline/page.py` `page_anchor`) — the cpu engine's reading of the page, its Markdown of the text
layer when it trusts it (reading order, headings, tables as the model writes them), its OCR otherwise. Anchors
are clipped to {first.anchor_max_chars} characters, head kept. Drafts come from vLLM's n-gram proposer over
prompt + generated tokens (longest n-gram from max down to min, earliest occurrence, up to
`num_speculative_tokens` tokens) with the engine's defaults (`PAGEMILL_ENGINE__SERVE__PROMPT_LOOKUP_MIN`/`MAX`);
verification is greedy: the accepted prefix plus one bonus token per step, and the prefill step commits the
first token. Tokens: pagemill's byte-level BPE ({first.tokenizer_vocab} tokens, Qwen2 pre-tokenization, trained
on committed neutral text: `pagemill_eval/tokenizer.py`), which splits words finer than a production
tokenizer. A figure is the tokens over the steps of all pages of its row; a case counts under each of its
kinds.

References, first usable per case: Markdown (docling's, cut into pages by its DoclingDocument JSON; olmOCR's
front matter dropped) → derived HTML tables (PubTabNet crops: the whole image; ICDAR pages: only their tables)
→ plain text (spaces collapsed) → LaTeX source body (comments and TikZ removed).

{chr(10).join(chr(10) + part for part in parts).strip()}
{END}"""


def write_section(path: Path, section: str) -> None:
    """Puts the section between the specsim markers, leaving the rest of the file as it is."""
    sections.write_section(path, section, "specsim")
