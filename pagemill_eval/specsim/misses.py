"""Where n-gram drafts fail: each verification step that commits less than a full draft, by why and by what.

A step is **short** when fewer than `num_speculative_tokens` draft tokens are accepted (the last step of a page
aside). Its **cause**: `novel` when the target's next `CONTINUATION` tokens occur nowhere in the prompt (the
anchor lacks that text in that form: no lookup finds it there, though the page's own earlier output may),
`misplaced` when they do occur there but the draft came from another place (the n-gram matched an earlier
look-alike: repeated cells, numbers), `no draft` when no n-gram of the context was found at all. Its **text**:
what the first rejected token is — markup of an HTML tag, a pipe-table rule, a line break, LaTeX, Markdown
markup, digits, a word, spaces or punctuation. **Lost steps** are the steps spent beyond a perfect drafter's
(target tokens / (k + 1)): what better drafts could still save.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pagemill_eval.specsim.lookup import LookupParams, NgramIndex

CONTINUATION = 4
CAUSES = ("novel", "misplaced", "no draft")
TEXT_CLASSES = ("html markup", "pipe table", "line break", "latex", "markdown markup", "digits", "word", "space",
                "punctuation")


@dataclass(slots=True)
class Misses:
    tokens: int = 0
    steps: int = 0
    lost_steps: float = 0.0
    short: Counter[tuple[str, str]] = field(default_factory=Counter)  # (text class, cause) -> short steps

    def add(self, other: Misses) -> None:
        self.tokens += other.tokens
        self.steps += other.steps
        self.lost_steps += other.lost_steps
        self.short.update(other.short)


def text_class(before: str, token: str) -> str:
    """What the first rejected token is, read with the text before it (an open `<` means inside a tag)."""
    stripped = token.strip()
    tail = before[-60:]
    if tail.rfind("<") > tail.rfind(">") or stripped.startswith("<") or stripped in (">", "/>", '">'):
        return "html markup"
    if "|" in token:
        return "pipe table"
    if "\n" in token:
        return "line break"
    if "\\" in token or "$" in token or re.search(r"[{}^_]", token):
        return "latex"
    if stripped[:1] in ("#", "*"):
        return "markdown markup"
    if re.search(r"\d", token):
        return "digits"
    if re.search(r"\w", token):
        return "word"
    return "space" if not stripped else "punctuation"


def page_misses(prompt: Sequence[int], target: Sequence[int], params: LookupParams,
                decode: Callable[[Sequence[int]], str]) -> Misses:
    """Decodes `target` after `prompt` as `simulate.simulate` does, classifying each short step."""
    misses = Misses(tokens=len(target))
    if not target:
        return misses
    in_prompt = {tuple(prompt[i:i + CONTINUATION]) for i in range(len(prompt) - CONTINUATION + 1)}
    index = NgramIndex(params)
    index.extend(prompt)
    index.extend(target[:1])
    position, misses.steps = 1, 1
    while position < len(target):
        draft = index.propose()
        accepted = 0
        while (accepted < len(draft) and position + accepted < len(target)
               and draft[accepted] == target[position + accepted]):
            accepted += 1
        miss = position + accepted
        if accepted < params.num_speculative_tokens and miss < len(target) - 1:
            if not draft:
                cause = "no draft"
            else:
                cause = "misplaced" if tuple(target[miss:miss + CONTINUATION]) in in_prompt else "novel"
            before = decode(target[max(0, miss - 30):miss])
            misses.short[(text_class(before, decode(target[miss:miss + 1])), cause)] += 1
        committed = min(accepted + 1, len(target) - position)
        index.extend(target[position:position + committed])
        position += committed
        misses.steps += 1
    misses.lost_steps = misses.steps - len(target) / (params.num_speculative_tokens + 1)
    return misses


def misses_table(misses: Misses) -> str:
    """Short steps by the rejected token's text and the cause, most frequent first."""
    by_class = Counter[str]()
    for (text, _), count in misses.short.items():
        by_class[text] += count
    total = sum(by_class.values()) or 1
    rows = ["| rejected token | short steps | share | novel | misplaced | no draft |", "|---|---|---|---|---|---|"]
    for text, count in by_class.most_common():
        rows.append(f"| {text} | {count} | {count / total:.0%} | "
                    + " | ".join(str(misses.short[(text, cause)]) for cause in CAUSES) + " |")
    causes = [sum(n for (_, c), n in misses.short.items() if c == cause) for cause in CAUSES]
    rows.append(f"| **all** | {sum(causes)} | 100% | " + " | ".join(str(n) for n in causes) + " |")
    return "\n".join(rows)
