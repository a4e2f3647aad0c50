"""Prompt-lookup (n-gram) drafting, as vLLM's `NgramProposer` (v1 spec_decode) defines it.

The context is every token of the request so far: the prompt and the tokens generated until now. The proposer
takes the longest n from `prompt_lookup_max` down to `prompt_lookup_min` whose last-n tokens occur earlier in
the context (the occurrence may overlap the suffix, but must end before the last token); of those occurrences it
takes the *earliest*; the draft is the up to `num_speculative_tokens` tokens that follow it, fewer when the
context ends first. No such n: no draft. (vLLM also shortens the draft at `max_model_len`; pages never reach it
here.)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class LookupParams:
    num_speculative_tokens: int = 4
    prompt_lookup_min: int = 2
    prompt_lookup_max: int = 4

    def __post_init__(self) -> None:
        if self.num_speculative_tokens < 1:
            raise ValueError("num_speculative_tokens must be at least 1")
        if not 1 <= self.prompt_lookup_min <= self.prompt_lookup_max:
            raise ValueError("need 1 <= prompt_lookup_min <= prompt_lookup_max")


def propose(context: Sequence[int], params: LookupParams) -> list[int]:
    """The definition, read straight: O(len(context) × prompt_lookup_max) per call. `NgramIndex` is the fast one."""
    total = len(context)
    for n in range(min(params.prompt_lookup_max, total - 1), params.prompt_lookup_min - 1, -1):
        suffix = list(context[total - n:])
        for start in range(total - n):  # occurrences that end before the last token
            if list(context[start:start + n]) == suffix:
                return list(context[start + n:start + n + params.num_speculative_tokens])
    return []


class NgramIndex:
    """The same drafts as `propose`, for a context that only grows: the first start of every n-gram is kept.

    Since the earliest occurrence wins, an n-gram's entry never changes once written, and a lookup is a dict
    probe per n. The suffix is itself indexed, so an entry pointing at it means "no earlier occurrence".
    """

    def __init__(self, params: LookupParams) -> None:
        self.params = params
        self.tokens: list[int] = []
        self._first: dict[int, dict[tuple[int, ...], int]] = {
            n: {} for n in range(params.prompt_lookup_min, params.prompt_lookup_max + 1)}

    def extend(self, tokens: Iterable[int]) -> None:
        for token in tokens:
            self.tokens.append(token)
            end = len(self.tokens)
            for n, first in self._first.items():
                if end >= n:
                    first.setdefault(tuple(self.tokens[end - n:]), end - n)

    def propose(self) -> list[int]:
        total = len(self.tokens)
        for n in range(min(self.params.prompt_lookup_max, total - 1), self.params.prompt_lookup_min - 1, -1):
            start = self._first[n].get(tuple(self.tokens[total - n:]))
            if start is not None and start < total - n:
                return self.tokens[start + n:start + n + self.params.num_speculative_tokens]
        return []
