"""Does each block's confidence predict a badly read block, and does a page confidence derived from its blocks
rank bad cases better than the page's own?

Input: for each corpus, the corpus folder, its eval report (`pagemill eval --json`) and the saved outputs
(`--save-outputs`, which carry each page's elements: type, text, own confidence).

- **Blocks**: every element with a confidence and at least `MIN_BLOCK_CHARS` characters of normalized text
  (figures and page headers/footers are left out) of a case with a text reference. Its score is its text
  similarity to the stretch of the reference it aligns to best (`textsim.aligned_similarity`: rapidfuzz's
  partial alignment, then the Levenshtein-best boundaries); a block scoring under 0.5 is bad — it is nowhere in
  the reference as read (garbled, or text the page does not hold). A reference that leaves out part of the
  page (running heads, a table kept apart) makes those blocks look bad too: hence the generated set, whose
  reference is the whole text layer, is the one to read first.
- **Pages from blocks**: per case, as `calibration.py` does (the lowest page confidence against the case's
  score), with each page's confidence replaced by its blocks' character-weighted mean (`mean`) or by its
  weakest block of `MIN_BLOCK_CHARS` or more (`min`), beside the page's own (`page`).

    python -m pagemill_eval.block_calibration dev=CORPUS/dev:dev.json:out/dev gen=calib:gen.json:out/gen
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pagemill_eval.calibration import Sample, auroc
from pagemill_eval.corpus import load_cases
from pagemill_eval.textsim import aligned_similarity, normalize

MIN_BLOCK_CHARS = 20
SKIPPED_TYPES = frozenset({"figure", "page_header", "page_footer"})


def _report_cases(report_path: Path, corpus_dir: Path) -> list[dict[str, Any]]:
    data = json.loads(report_path.read_text())
    reports = data.get("reports") or [data]
    for report in reports:
        if Path(str(report.get("meta", {}).get("corpus", ""))).name == corpus_dir.name:
            return list(report["cases"])
    return list(reports[0]["cases"])


def block_samples(corpus_dir: Path, outputs: Path, *, page_confidence: bool = False) -> list[Sample]:
    """One sample per rated, alignable block of the cases with a text reference; `page_confidence`: each block
    with its page's confidence instead of its own (what a block-blind reader would go by)."""
    samples: list[Sample] = []
    for case in load_cases(corpus_dir):
        reference = case.text_reference()
        saved = outputs / f"{case.case_id}.json"
        if reference is None or not saved.exists():
            continue
        wanted = normalize(reference.path.read_text(encoding="utf-8", errors="replace"))
        outcome = json.loads(saved.read_text())
        pages = outcome.get("confidences") or []
        for page, blocks in enumerate(outcome.get("blocks") or [], start=1):
            for n, block in enumerate(blocks):
                text = normalize(block.get("text") or "")
                if block.get("confidence") is None or block.get("type") in SKIPPED_TYPES \
                        or len(text) < MIN_BLOCK_CHARS:
                    continue
                own = pages[page - 1] if page_confidence and page <= len(pages) else block["confidence"]
                samples.append(Sample(f"{case.case_id}/p{page}/b{n}", float(own or 0.0),
                                      aligned_similarity(text, wanted)))
    return samples


def _page_from_blocks(blocks: list[dict[str, Any]], rule: str) -> float | None:
    rated = [b for b in blocks if b.get("confidence") is not None and b.get("type") not in SKIPPED_TYPES]
    if not rated:
        return None
    if rule == "min":
        long = [b for b in rated if len(b.get("text") or "") >= MIN_BLOCK_CHARS] or rated
        return min(float(b["confidence"]) for b in long)
    weights = [max(1, len(b.get("text") or "")) for b in rated]
    return sum(float(b["confidence"]) * w for b, w in zip(rated, weights, strict=True)) / sum(weights)


def case_samples_by_rule(cases: Sequence[dict[str, Any]], outputs: Path, rule: str) -> list[Sample]:
    """Per scored case: the lowest page confidence (`page`: the page's own; `mean`, `min`: from its blocks, the
    page's own where it has no rated block) against its TEDS, else text similarity."""
    samples: list[Sample] = []
    for case in cases:
        score = case["teds"] if case.get("teds") is not None else case.get("text_similarity")
        saved = outputs / f"{case['case_id']}.json"
        if score is None or case.get("min_confidence") is None or not saved.exists():
            continue
        outcome = json.loads(saved.read_text())
        blocks = outcome.get("blocks") or []
        pages: list[float] = []
        for index, own in enumerate(outcome.get("confidences") or []):
            if own is None:
                continue
            derived = _page_from_blocks(blocks[index], rule) if rule != "page" and index < len(blocks) else None
            pages.append(float(own) if derived is None else derived)
        if pages:
            samples.append(Sample(case["case_id"], min(pages), float(score)))
    return samples


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def report(corpora: list[tuple[str, Path, Path, Path]]) -> list[str]:
    lines = ["| corpus | blocks | bad < 0.5 | block AUROC | (page's confidence) | cases | bad | page AUROC: own | "
             "from blocks: mean | min |", "|---|---|---|---|---|---|---|---|---|---|"]
    for name, corpus_dir, report_path, outputs in corpora:
        blocks = block_samples(corpus_dir, outputs)
        blind = block_samples(corpus_dir, outputs, page_confidence=True)
        cases = _report_cases(report_path, corpus_dir)
        by_rule = {rule: case_samples_by_rule(cases, outputs, rule) for rule in ("page", "mean", "min")}
        lines.append(f"| {name} | {len(blocks)} | {sum(s.bad for s in blocks)} | {_fmt(auroc(blocks))} | "
                     f"{_fmt(auroc(blind))} | "
                     f"{len(by_rule['page'])} | {sum(s.bad for s in by_rule['page'])} | "
                     + " | ".join(_fmt(auroc(by_rule[r])) for r in ("page", "mean", "min")) + " |")
    return lines


def main(argv: list[str]) -> int:
    corpora = []
    for spec in argv:
        name, _, paths = spec.partition("=")
        corpus_dir, report_path, outputs = paths.split(":")
        corpora.append((name, Path(corpus_dir), Path(report_path), Path(outputs)))
    if not corpora:
        print(__doc__)
        return 2
    print("\n".join(report(corpora)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
