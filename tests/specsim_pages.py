"""A page for the speculation simulators of the tests: the fields `pagemill_eval.specsim.variants.SimulatedPage`
asks for, token ids given directly (no corpus, no tokenizer)."""

from __future__ import annotations

from dataclasses import dataclass, field

from pagemill_eval.specsim.simulate import DecodeStats


@dataclass
class Page:
    case_id: str
    prompt_ids: list[int]
    target_ids: list[int]
    stats: dict[int, dict[str, DecodeStats]] = field(default_factory=dict)
