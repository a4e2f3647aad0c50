"""Speculative decoding with prompt-lookup drafts and greedy verification, against an oracle model.

The oracle emits the target tokens, so a draft token is accepted while it equals the target's next token. One
verification step (one forward pass) commits the accepted prefix of the draft plus one token of the model's
own (the bonus token: the correction of the first wrong draft token, or the token after a fully accepted
draft), as vLLM's rejection sampler does at temperature 0. As in vLLM, the prefill step commits the first token
without a draft, because drafts are proposed from sampled tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pagemill_eval.specsim.lookup import LookupParams, NgramIndex


@dataclass(slots=True)
class DecodeStats:
    generated: int = 0  # target tokens committed (all of them, once decoding ends)
    steps: int = 0  # forward passes that committed tokens, the prefill included
    drafted: int = 0  # draft tokens proposed
    accepted: int = 0  # draft tokens accepted

    @property
    def committed_per_step(self) -> float:
        return self.generated / self.steps if self.steps else 0.0

    def add(self, other: DecodeStats) -> None:
        self.generated += other.generated
        self.steps += other.steps
        self.drafted += other.drafted
        self.accepted += other.accepted


def simulate(prompt: Sequence[int], target: Sequence[int], params: LookupParams) -> DecodeStats:
    stats = DecodeStats()
    if not target:
        return stats
    index = NgramIndex(params)
    index.extend(prompt)
    index.extend(target[:1])
    position, stats.steps = 1, 1
    while position < len(target):
        committed = verify(index.propose(), target, position, stats)
        index.extend(target[position:position + committed])
        position += committed
    stats.generated = position
    return stats


def verify(draft: Sequence[int], target: Sequence[int], position: int, stats: DecodeStats) -> int:
    """One verification step of `draft` at `position` against the oracle `target`: the tokens it commits (the
    accepted prefix plus the bonus token, within the target), counted into `stats`."""
    accepted = 0
    while (accepted < len(draft) and position + accepted < len(target)
           and draft[accepted] == target[position + accepted]):
        accepted += 1
    stats.steps += 1
    stats.drafted += len(draft)
    stats.accepted += accepted
    return min(accepted + 1, len(target) - position)
