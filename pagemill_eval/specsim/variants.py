"""Suffix decoding beside the n-gram anchor: the variants `pagemill specsim` measures over a run's pages.

Every variant drafts for the prompt the engine sends (the `engine` anchor) and differs in vLLM's suffix
parameters and in its **history**, what the global tree holds when a page is decoded:
- `prompt`: nothing (`suffix_decoding_max_cached_requests` 0): the page's prompt tree and its own output;
- `document`: the outputs of the earlier pages of the same document, one request after the other;
- `corpus`: the outputs of every earlier page of the corpus (manifest order), as a long-running server's cache
  holds them (vLLM's default of 10000 cached requests is more than a corpus has pages).
A server decoding the pages of a document at once sees less than `document` of its own document and more than it
of other documents: `document` is the figure for a document nobody has seen.

`+ngram` variants take the n-gram proposer's draft when the suffix trees have none: not a method vLLM 0.32
serves (one method per server), measured to see what the combination would be worth.

`NgramVariant`s are vLLM's n-gram proposer on the same prompt with other lookup lengths
(`prompt_lookup_min`..`max`): the sweep sets them beside the suffix knobs, so the served method is chosen from
both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import groupby
from typing import Protocol, TypeVar

from pagemill_eval.specsim.lookup import LookupParams
from pagemill_eval.specsim.simulate import DecodeStats, simulate
from pagemill_eval.specsim.suffix import SuffixCache, SuffixParams

HISTORIES = ("prompt", "document", "corpus")


class SimulatedPage(Protocol):
    case_id: str
    prompt_ids: list[int]
    target_ids: list[int]
    stats: dict[int, dict[str, DecodeStats]]


@dataclass(frozen=True, slots=True)
class Variant:
    params: SuffixParams  # num_speculative_tokens is set per draft length
    history: str = "document"
    ngram_fallback: bool = False

    def __post_init__(self) -> None:
        if self.history not in HISTORIES:
            raise ValueError(f"history {self.history!r}: choose one of {', '.join(HISTORIES)}")

    @property
    def name(self) -> str:
        p = self.params
        knobs = f"d{p.max_tree_depth} f{p.max_spec_factor:g} p{p.min_token_prob:g}"
        return f"suffix{'+ngram' if self.ngram_fallback else ''} {self.history} {knobs}"

    @property
    def label(self) -> str:
        fallback = " + n-gram" if self.ngram_fallback else ""
        return {"prompt": f"suffix{fallback}, no history", "document": f"suffix{fallback}, document history",
                "corpus": f"suffix{fallback}, corpus history"}[self.history]

    def vllm_config(self, k: int) -> dict[str, object]:
        """The `--speculative-config` that serves this variant (none for an n-gram fallback)."""
        if self.ngram_fallback:
            raise ValueError("vLLM 0.32 serves one speculative method: suffix with an n-gram fallback is not one")
        config: dict[str, object] = {
            "method": "suffix", "num_speculative_tokens": k,
            "suffix_decoding_max_tree_depth": self.params.max_tree_depth,
            "suffix_decoding_max_spec_factor": self.params.max_spec_factor,
            "suffix_decoding_min_token_prob": self.params.min_token_prob,
        }
        if self.history == "prompt":
            config["suffix_decoding_max_cached_requests"] = 0
        return config


def measure(pages: Sequence[SimulatedPage], variant: Variant, k: int, lookup: LookupParams) -> None:
    """Decodes every page under `variant` with drafts of up to `k` tokens, in order, into
    `page.stats[k][variant.name]`; `lookup` is the n-gram fallback's proposer (its k is replaced)."""
    params = replace(variant.params, num_speculative_tokens=k)
    fallback = replace(lookup, num_speculative_tokens=k) if variant.ngram_fallback else None

    def cache() -> SuffixCache:
        return SuffixCache(params, use_global=variant.history != "prompt", fallback=fallback)

    corpus_cache = cache()
    for _, document in groupby(pages, key=lambda page: page.case_id):
        document_cache = corpus_cache if variant.history == "corpus" else cache()
        for page in document:
            page_cache = cache() if variant.history == "prompt" else document_cache
            page.stats.setdefault(k, {})[variant.name] = page_cache.simulate(page.prompt_ids, page.target_ids)


@dataclass(frozen=True, slots=True)
class NgramVariant:
    prompt_lookup_min: int
    prompt_lookup_max: int

    @property
    def name(self) -> str:
        return f"n-gram {self.prompt_lookup_min}..{self.prompt_lookup_max}"

    def lookup(self, k: int) -> LookupParams:
        return LookupParams(k, self.prompt_lookup_min, self.prompt_lookup_max)


def measure_ngram(pages: Sequence[SimulatedPage], variant: NgramVariant, k: int) -> None:
    """Decodes every page's engine-anchor prompt with n-gram drafts of `variant`'s lookup lengths."""
    for page in pages:
        page.stats.setdefault(k, {})[variant.name] = simulate(page.prompt_ids, page.target_ids, variant.lookup(k))


def served_params() -> SuffixParams:
    """The suffix parameters `pagemill vllm-command` serves (`services/worker/engines/vllm/serve.py`)."""
    from services.worker.engines.vllm.serve import SUFFIX_DECODING

    return SuffixParams(max_tree_depth=int(SUFFIX_DECODING["suffix_decoding_max_tree_depth"]),
                        max_spec_factor=float(SUFFIX_DECODING["suffix_decoding_max_spec_factor"]),
                        min_token_prob=float(SUFFIX_DECODING["suffix_decoding_min_token_prob"]))


def table_variants(params: SuffixParams | None = None) -> list[Variant]:
    """The parameters (default: the served ones) under each history, and with an n-gram fallback: the per-kind
    tables."""
    params = params or served_params()
    return [Variant(params, "prompt"), Variant(params, "document"), Variant(params, "corpus"),
            Variant(params, "document", ngram_fallback=True)]


# The sweep, at document history: vLLM's knobs around its defaults (depth 24, factor 1, min prob 0.1).
SWEEP_FACTORS = (1.0, 2.0, 4.0)
SWEEP_MIN_PROBS = (0.1, 0.05)  # vLLM's default first: it wins a tie
SWEEP_DEPTHS = (16, 64)  # at the defaults' factor and min prob


# n-gram lookup lengths (min..max): the engine's earlier 2..8 first, then longer and 1-token minimums. A longer
# n-gram finds the right one of many look-alike places of the anchor (table cells, numbers).
SWEEP_LOOKUPS = ((2, 8), (2, 16), (2, 24), (2, 32), (1, 8), (1, 16), (1, 24), (1, 32), (1, 64))


class Named(Protocol):
    @property
    def name(self) -> str: ...


V = TypeVar("V", bound=Named)


def sweep_variants() -> list[Variant | NgramVariant]:
    grid: list[Variant | NgramVariant] = [Variant(SuffixParams(max_spec_factor=factor, min_token_prob=prob))
                                          for factor in SWEEP_FACTORS for prob in SWEEP_MIN_PROBS]
    grid += [Variant(SuffixParams(max_tree_depth=depth)) for depth in SWEEP_DEPTHS]
    return grid + [NgramVariant(low, high) for low, high in SWEEP_LOOKUPS]


def best_variant(pages: Sequence[SimulatedPage], variants: Sequence[V], ks: Sequence[int]) -> V:
    """The variant whose pages commit the most tokens per step, pooled over the pages, summed over the draft
    lengths `ks`; the first of equals."""
    def score(variant: V) -> float:
        return sum(_pooled(pages, variant.name, k) for k in ks)

    return max(variants, key=score)


def _pooled(pages: Sequence[SimulatedPage], name: str, k: int) -> float:
    total = DecodeStats()
    for page in pages:
        total.add(page.stats[k][name])
    return total.committed_per_step
