"""How sure a model was of what it wrote: its token log-probabilities mapped onto its answer's blocks.

With `logprobs: true` a vLLM chat completion carries every generated token and its log-probability,
`choices[0].logprobs.content[i] = {"token", "logprob", "bytes", "top_logprobs"}` (a probability too small for a
float comes as -9999.0). `read_tokens` places the tokens on the answer's text; `score_elements` finds each block of
the page in that text and gives it a confidence made of two factors:

    token factor      exp(mean log-probability of the tokens that wrote the block): their geometric mean
                      probability, 1 when the model never hesitated
    agreement factor  the block's `alignment` with the cpu engine's reading of the page (align.py), floored at
                      AGREEMENT_FLOOR (the reading can be the wrong one). Counted where both exist: a block of
                      printed words on a page where the reading found words. Not a figure (its text is the
                      model's description of it), a formula (its LaTeX and the page's words for it are spellings
                      too unlike to match) or a derived chart table (not printed on the page).

A block's confidence is the product; either factor alone where the other is missing; none when both are. A
block that cannot be found in the tokens' text takes the whole answer's token factor. The page's confidence is
the blocks' mean weighted by their text's length, so a long table counts for more than its heading.
"""

from __future__ import annotations

import bisect
import json
import math
from collections.abc import Sequence
from typing import Any

from services.core.elements import Element, ElementType
from services.worker.engines.base import AnswerTokens

# A token vLLM could not put a probability on (-9999.0) counts as this: unlikely, without wiping out its block.
MIN_LOGPROB = -20.0
AGREEMENT_FLOOR = 0.1
_NO_AGREEMENT = frozenset({ElementType.FIGURE, ElementType.FORMULA})
_REPLACEMENT = "\ufffd"  # what vLLM writes for a token that ends inside a multi-byte character
_RESYNC_CHARS = 12


def read_tokens(choice: dict[str, Any], content: str) -> AnswerTokens | None:
    """The tokens of a chat completion's choice placed on its `content`, or None when it has no log-probabilities."""
    logprobs = choice.get("logprobs")
    entries = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not isinstance(entries, list):
        return None
    pieces: list[str] = []
    values: list[float] = []
    for entry in entries:
        token = entry.get("token") if isinstance(entry, dict) else None
        logprob = entry.get("logprob") if isinstance(entry, dict) else None
        if isinstance(token, str) and isinstance(logprob, int | float) and not math.isnan(logprob):
            pieces.append(token)
            values.append(max(float(logprob), MIN_LOGPROB))
    if not pieces:
        return None
    written = "".join(pieces)
    to_content = _char_map(written, content) if written != content else list(range(len(written) + 1))
    spans: list[tuple[int, int]] = []
    at = 0
    for piece in pieces:
        spans.append((to_content[at], to_content[at + len(piece)]))
        at += len(piece)
    return AnswerTokens(text=content, spans=tuple(spans), logprobs=tuple(values))


def _char_map(written: str, content: str) -> list[int]:
    """For each position of the tokens' concatenation, the position of `content` it stands for.

    They differ where a character's bytes were split over tokens: vLLM 0.32 writes the parts as "" and the whole
    character on the token that completes it, so the two agree unless the bytes never make a character (then
    the content has U+FFFD that no token wrote); older servers write each part as U+FFFD. Content characters no
    token wrote go to the token written next, and tokens' characters the content lacks (text the server
    changed after generating it) stand for nothing, until a stretch of the tokens' text is found again."""
    mapping = [-1] * (len(written) + 1)
    i = j = 0
    while i < len(written):
        if mapping[i] < 0:
            mapping[i] = j
        if j < len(content) and written[i] == content[j]:
            i, j = i + 1, j + 1
        elif written[i] == _REPLACEMENT:
            run_end = i
            while run_end < len(written) and written[run_end] == _REPLACEMENT:
                run_end += 1
            following = written[run_end] if run_end < len(written) else None
            taken = j
            while taken < len(content) and content[taken] != following and ord(content[taken]) > 127:
                taken += 1
            for k in range(i, run_end):  # the run's characters share the ones they stand for
                mapping[k] = j + (taken - j) * (k - i) // (run_end - i)
            i, j = run_end, taken
        elif j < len(content) and ord(content[j]) > 127:
            j += 1  # a character no token wrote (U+FFFD for bytes that never made one)
        else:
            found = content.find(written[i:i + _RESYNC_CHARS], j)
            if found > j:
                j = found
            else:
                i += 1
    mapping[len(written)] = len(content)  # what is left of the content, the last token wrote
    return [m if m >= 0 else len(content) for m in mapping]


def slice_tokens(tokens: AnswerTokens, start: int, end: int) -> AnswerTokens:
    """The tokens that wrote `tokens.text[start:end]`, placed on that part (one page of a group's answer)."""
    kept = [(s, e, lp) for (s, e), lp in zip(tokens.spans, tokens.logprobs, strict=True) if s < end and e > start]
    return AnswerTokens(text=tokens.text[start:end],
                        spans=tuple((max(s, start) - start, min(e, end) - start) for s, e, _ in kept),
                        logprobs=tuple(lp for _, _, lp in kept))


def token_factor(logprobs: Sequence[float]) -> float | None:
    """exp of the mean log-probability: the tokens' geometric mean probability."""
    return math.exp(sum(logprobs) / len(logprobs)) if logprobs else None


def score_elements(elements: list[Element], tokens: AnswerTokens | None, *, reading_has_words: bool
                   ) -> tuple[list[Element], float | None, dict[str, float]]:
    """The elements with `confidence` set, the page's confidence, and the signals it was made of."""
    whole = token_factor(tokens.logprobs) if tokens is not None else None
    starts = [s for s, _ in tokens.spans] if tokens is not None else []
    cursor = 0
    scored: list[Element] = []
    agreements: list[float] = []
    for element in elements:
        token_part = whole
        if tokens is not None:
            span = locate(element, tokens.text, cursor)
            if span is not None:
                cursor = max(cursor, span[1])
                token_part = token_factor(_logprobs_within(tokens, starts, *span)) or whole
        agreement = None
        if reading_has_words and element.alignment is not None and element.type not in _NO_AGREEMENT \
                and not element.derived:
            agreement = max(element.alignment, AGREEMENT_FLOOR)
            agreements.append(element.alignment)
        parts = [p for p in (token_part, agreement) if p is not None]
        confidence = _rounded(math.prod(parts)) if parts else None
        scored.append(element.model_copy(update={"confidence": confidence}))
    signals: dict[str, float] = {}
    if whole is not None and tokens is not None:
        signals.update(token_confidence=round(whole, 4), tokens_scored=float(len(tokens.logprobs)))
    if agreements:
        signals["agreement"] = round(sum(agreements) / len(agreements), 4)
    return scored, page_confidence(scored), signals


def page_confidence(elements: list[Element]) -> float | None:
    """The blocks' confidences averaged, each weighing its text's length (at least 1)."""
    weighted = [(max(len(e.text), 1), e.confidence) for e in elements if e.confidence is not None]
    if not weighted:
        return None
    return _rounded(sum(w * c for w, c in weighted) / sum(w for w, _ in weighted))


def locate(element: Element, text: str, cursor: int) -> tuple[int, int] | None:
    """Where in the answer `text` the element was written: its Markdown (or HTML, LaTeX, plain text, as written
    or as a JSON string for layout answers) found after `cursor` or else anywhere, else its lines' first to last
    found; None when nothing of it is there."""
    candidates = [c.strip() for c in (element.markdown, element.html, element.latex, element.text) if c]
    for needle in [*candidates, *(json.dumps(c, ensure_ascii=False)[1:-1] for c in candidates)]:
        if not needle:
            continue
        at = text.find(needle, cursor)
        if at < 0:
            at = text.find(needle)
        if at >= 0:
            return at, at + len(needle)
    found: list[tuple[int, int]] = []
    position = cursor
    for line in (candidates[0] if candidates else "").splitlines():
        line = line.strip()
        at = text.find(line, position) if line else -1
        if at >= 0:
            found.append((at, at + len(line)))
            position = at + len(line)
    return (found[0][0], found[-1][1]) if found else None


def _logprobs_within(tokens: AnswerTokens, starts: list[int], start: int, end: int) -> list[float]:
    """The log-probabilities of the tokens that wrote any of `text[start:end]`."""
    first = max(bisect.bisect_left(starts, start) - 1, 0)  # the one token that can begin before `start`
    picked: list[float] = []
    for index in range(first, len(starts)):
        token_start, token_end = tokens.spans[index]
        if token_start >= end:
            break
        # A token that wrote nothing of the text (the first bytes of a character another token completes)
        # belongs where it stands.
        wrote_here = token_end > start if token_end > token_start else start <= token_start < end
        if wrote_here:
            picked.append(tokens.logprobs[index])
    return picked


def _rounded(value: float) -> float:
    """Four decimals, never rounded down to 0: a confidence is in (0, 1]."""
    return min(max(round(value, 4), 0.0001), 1.0)
