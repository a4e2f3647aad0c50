"""The measurement: every page of every case with a page-level target, under each anchor and draft length."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pagemill_eval.specsim import anchors
from pagemill_eval.specsim.corpus import Case, NoPageTruth, page_targets, read_manifest
from pagemill_eval.specsim.lookup import LookupParams
from pagemill_eval.specsim.misses import Misses, page_misses
from pagemill_eval.specsim.simulate import DecodeStats, simulate
from pagemill_eval.specsim.variants import NgramVariant, Variant, measure, measure_ngram
from pagemill_eval.tokenizer import EOS, load_tokenizer
from services.core.pdf import PDF, image_frame_png, inspect_document, split_pdf
from services.core.settings import Settings, VllmServeSettings
from services.worker.engines import PageInput
from services.worker.pipeline.quality import clip_anchor

MEASURED_ANCHORS = anchors.ANCHOR_KINDS


@dataclass(slots=True)
class PageResult:
    case_id: str
    page_number: int
    kinds: tuple[str, ...]
    source: str  # the ground-truth file the target came from
    scope: str  # "page" or "tables"
    target_tokens: int
    anchor_chars: dict[str, int]
    anchor_source: str  # what the engine's anchor was read from: text_layer, ocr (none: no anchor)
    stats: dict[int, dict[str, DecodeStats]] = field(default_factory=dict)  # k -> anchor or variant -> stats
    # The engine anchor's prompt and the target, token ids: what the suffix variants decode after the corpus.
    prompt_ids: list[int] = field(default_factory=list, repr=False)
    target_ids: list[int] = field(default_factory=list, repr=False)
    # The short steps of the engine anchor under the served n-gram proposer, at the first draft length.
    misses: Misses = field(default_factory=Misses, repr=False)


@dataclass(slots=True)
class SpecsimRun:
    lookup_min: int
    lookup_max: int
    ks: tuple[int, ...]
    anchor_max_chars: int
    tokenizer_vocab: int
    pages: list[PageResult] = field(default_factory=list)
    variants: list[Variant] = field(default_factory=list)  # suffix decoding, measured on the engine anchor
    # more suffix variants and n-gram lookup lengths, reported overall and digital only
    sweep: list[Variant | NgramVariant] = field(default_factory=list)
    anchors: tuple[str, ...] = MEASURED_ANCHORS  # the anchors measured with n-gram drafts ("engine" always)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (case id, reason)


def document_pages(data: bytes) -> list[tuple[int, str, bytes]]:
    """(page number, media type, bytes) per page: single-page PDFs, or the image (one PNG per frame)."""
    info = inspect_document(data)
    numbers = list(range(1, info.page_count + 1))
    if info.media_type == PDF:
        return [(n, PDF, page) for n, page in zip(numbers, split_pdf(data, numbers), strict=True)]
    if info.page_count == 1:
        return [(1, info.media_type, data)]
    return [(n, "image/png", image_frame_png(data, n - 1)) for n in numbers]


def select_cases(cases: list[Case], patterns: Sequence[str]) -> list[Case]:
    if not patterns:
        return cases
    return [case for case in cases if any(fnmatch.fnmatch(case.case_id, p) for p in patterns)]


# The engine's own configuration (vLLM's `--speculative-config`), so a plain run measures what is served.
LOOKUP_MIN = VllmServeSettings.model_fields["prompt_lookup_min"].default
LOOKUP_MAX = VllmServeSettings.model_fields["prompt_lookup_max"].default


def run_specsim(corpus_dir: Path, settings: Settings, *, ks: Sequence[int] = (4, 8), lookup_min: int = LOOKUP_MIN,
                lookup_max: int = LOOKUP_MAX, anchor_max_chars: int = anchors.DEFAULT_ANCHOR_MAX_CHARS,
                case_patterns: Sequence[str] = (), variants: Sequence[Variant] = (),
                sweep: Sequence[Variant | NgramVariant] = (),
                anchor_names: Sequence[str] = anchors.DEFAULT_ANCHORS,
                on_page: Callable[[PageResult], None] | None = None) -> SpecsimRun:
    """Every page under each anchor with n-gram drafts, then (the engine anchor's prompt) under each suffix
    variant, at each draft length in `ks`."""
    params = {k: LookupParams(num_speculative_tokens=k, prompt_lookup_min=lookup_min, prompt_lookup_max=lookup_max)
              for k in ks}
    tokenizer = load_tokenizer()
    eos = tokenizer.token_to_id(EOS)
    if eos is None:
        raise RuntimeError(f"the tokenizer has no {EOS} token")
    run = SpecsimRun(lookup_min, lookup_max, tuple(ks), anchor_max_chars, tokenizer.get_vocab_size(),
                     variants=list(variants), sweep=list(sweep),
                     anchors=tuple(name for name in MEASURED_ANCHORS if name in anchor_names or name == "engine"))

    def anchor_text(name: str, page: PageInput, reference: str) -> str:
        if name in anchors.ORACLE_ANCHORS:
            return anchors.oracle_anchor(name, reference)
        if name == "ocr":
            return anchors.ocr_text(settings, page)
        return anchors.text_layer(page.data if page.is_pdf else None) if name == "text_layer" else ""

    def encode(text: str) -> list[int]:
        return list(tokenizer.encode(text, add_special_tokens=False).ids)

    for case in select_cases(read_manifest(corpus_dir), case_patterns):
        pages = document_pages(case.document.read_bytes())
        try:
            targets = page_targets(case, len(pages))
        except NoPageTruth as exc:
            run.skipped.append((case.case_id, str(exc)))
            continue
        for target, (number, media_type, page_bytes) in zip(targets, pages, strict=True):
            if not target.text:
                run.skipped.append((case.case_id, f"page {number}: the reference is empty"))
                continue
            page = PageInput(case.case_id, number - 1, media_type, page_bytes)
            clipped = {name: clip_anchor(anchor_text(name, page, target.text), anchor_max_chars) or ""
                       for name in run.anchors if name != "engine"}
            # the engine's anchor is also the prompt the suffix variants decode
            clipped["engine"], anchor_source = anchors.engine_anchor(settings, page, anchor_max_chars)
            prompts = {name: encode(anchors.prompt_text(anchor)) for name, anchor in clipped.items()}
            target_ids = [*encode(target.text), eos]
            result = PageResult(case.case_id, number, case.kinds, target.source, target.scope, len(target_ids),
                                {name: len(anchor) for name, anchor in clipped.items()}, anchor_source,
                                prompt_ids=prompts["engine"], target_ids=target_ids)
            for k, lookup in params.items():
                result.stats[k] = {name: simulate(prompts[name], target_ids, lookup) for name in run.anchors}
            result.misses = page_misses(prompts["engine"], target_ids, params[ks[0]], tokenizer.decode)
            run.pages.append(result)
            if on_page:
                on_page(result)
    measure_variants(run, [*sweep, *variants])
    return run


def measure_variants(run: SpecsimRun, variants: Sequence[Variant | NgramVariant]) -> None:
    """Decodes the run's pages under each variant at each of its draft lengths, unless already measured."""
    for variant in {v.name: v for v in variants}.values():
        for k in run.ks:
            if not run.pages or variant.name in run.pages[0].stats.get(k, {}):
                continue
            if isinstance(variant, NgramVariant):
                measure_ngram(run.pages, variant, k)
            else:
                measure(run.pages, variant, k, LookupParams(k, run.lookup_min, run.lookup_max))
