"""Suffix-decoding drafts, as vLLM's `suffix` method makes them (`SuffixDecodingProposer`, Arctic Inference).

Two suffix trees, each counting every substring of at most `max_tree_depth` tokens of the sequences put in it:
the request's own tree (its prompt, then its output as it grows) and the global tree (the outputs of earlier,
cached requests and the output of this one). The pattern is the last `max_tree_depth` tokens of the request
(prompt and output). For each match length m = 1, 2, ... while the pattern's last m tokens are a path of the
tree, a draft is walked from that node: the child with the highest count, the running probability multiplied
by child count / node count, stopping below `min_token_prob` or at min(`num_speculative_tokens`,
int(m × `max_spec_factor`)) tokens; the draft's score is the sum of its running probabilities and the best
score wins (a later, longer match on a tie). Of the two trees' drafts the global one wins only on a strictly
higher score. vLLM's defaults: depth 24, spec factor 1.0, min token prob 0.1, 10000 cached requests (a
corpus has far fewer pages, so no eviction is simulated); 0 cached requests turns the global tree off (the
prompt tree still drafts). Ties between children of equal count go to the child that reached that count
first (Arctic's hash map leaves that order unspecified), which lets each node keep its best child as counts
grow instead of scanning its children at every draft.

`SuffixCache(fallback=...)` is not a vLLM method: when the suffix trees draft nothing, the n-gram proposer's
draft is taken (a combination vLLM 0.32 cannot serve; measured to see what it would be worth).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from pagemill_eval.specsim.lookup import LookupParams, NgramIndex
from pagemill_eval.specsim.simulate import DecodeStats, verify


@dataclass(frozen=True, slots=True)
class SuffixParams:
    num_speculative_tokens: int = 4
    max_tree_depth: int = 24
    max_spec_factor: float = 1.0
    min_token_prob: float = 0.1

    def __post_init__(self) -> None:
        if self.num_speculative_tokens < 1 or self.max_tree_depth < 1:
            raise ValueError("num_speculative_tokens and max_tree_depth must be at least 1")
        if self.max_spec_factor < 0:
            raise ValueError("max_spec_factor must be >= 0")


@dataclass(slots=True)
class _Node:
    count: int = 0
    depth: int = 0
    children: dict[int, _Node] = field(default_factory=dict)
    best: tuple[int, _Node] | None = None  # (token, child) of the highest count; reached first on a tie


class SuffixTree:
    """Occurrence counts of every substring of at most `max_depth` tokens, for sequences that only grow."""

    def __init__(self, max_depth: int) -> None:
        self.max_depth = max_depth
        self.root = _Node()
        self._open: dict[int, list[_Node]] = {}  # per sequence: the nodes its still-growing suffixes reached

    def extend(self, seq_id: int, tokens: Iterable[int]) -> None:
        open_nodes = self._open.setdefault(seq_id, [])
        for token in tokens:
            grown: list[_Node] = []
            for node in [*open_nodes, self.root]:
                child = node.children.get(token)
                if child is None:
                    child = node.children[token] = _Node(depth=node.depth + 1)
                child.count += 1
                if node.best is None or child.count > node.best[1].count:
                    node.best = (token, child)
                if child.depth < self.max_depth:
                    grown.append(child)
            open_nodes[:] = grown

    def _walk(self, pattern: Sequence[int]) -> _Node | None:
        node: _Node | None = self.root
        for token in pattern:
            node = node.children.get(token) if node is not None else None
        return node

    def speculate(self, pattern: Sequence[int], params: SuffixParams) -> tuple[list[int], float]:
        best: tuple[list[int], float] = ([], 0.0)
        pattern = list(pattern[-params.max_tree_depth:])
        for match_len in range(1, len(pattern) + 1):
            node = self._walk(pattern[len(pattern) - match_len:])
            if node is None:
                break
            limit = min(params.num_speculative_tokens, int(match_len * params.max_spec_factor + 1e-6))
            draft: list[int] = []
            score, prob = 0.0, 1.0
            while len(draft) < limit and node.best is not None:
                token, child = node.best
                prob *= child.count / node.count
                if prob < params.min_token_prob:
                    break
                draft.append(token)
                score += prob
                node = child
            if score >= best[1]:
                best = (draft, score)
        return best


class SuffixCache:
    """The global tree of one document's requests; `request` opens one page's request against it."""

    def __init__(self, params: SuffixParams, *, use_global: bool = True, fallback: LookupParams | None = None) -> None:
        self.params = params
        self.global_tree = SuffixTree(params.max_tree_depth) if use_global else None
        self.fallback = fallback
        self._requests = 0

    def simulate(self, prompt: Sequence[int], target: Sequence[int]) -> DecodeStats:
        """One request decoded by an oracle emitting `target` (greedy verification, as `simulate.simulate`)."""
        stats = DecodeStats()
        if not target:
            return stats
        seq_id, self._requests = self._requests, self._requests + 1
        local = SuffixTree(self.params.max_tree_depth)
        local.extend(0, prompt)
        context = list(prompt)
        ngrams = NgramIndex(self.fallback) if self.fallback else None
        if ngrams:
            ngrams.extend(prompt)

        def commit(tokens: Sequence[int]) -> None:
            local.extend(0, tokens)
            if self.global_tree:
                self.global_tree.extend(seq_id, tokens)
            if ngrams:
                ngrams.extend(tokens)
            context.extend(tokens)

        commit(target[:1])
        position, stats.steps = 1, 1
        while position < len(target):
            pattern = context[-self.params.max_tree_depth:]
            draft, score = local.speculate(pattern, self.params)
            if self.global_tree:
                global_draft, global_score = self.global_tree.speculate(pattern, self.params)
                if global_score > score:
                    draft = global_draft
            if not draft and ngrams:
                draft = ngrams.propose()
            committed = verify(draft, target, position, stats)
            commit(target[position:position + committed])
            position += committed
        stats.generated = position
        return stats


def simulate_document(pages: Iterable[tuple[Sequence[int], Sequence[int]]], params: SuffixParams) -> list[DecodeStats]:
    """One request per page, in order; each page's output joins the global tree for the pages after it."""
    cache = SuffixCache(params)
    return [cache.simulate(prompt, target) for prompt, target in pages]
