"""Several consecutive pages in one vLLM request (presets with `pages_per_request > 1`), split back into pages.

The request carries the pages' images in order and asks for a `<!-- page k -->` line before each page's answer,
and for a sentence or table that runs across a page break to be written once, whole, on the page where it
starts. The answer is split at those markers; what the model still cut at a break is mended here:

- a paragraph repeated at the top of the next page (the model wrote the run-over text on both) is dropped there;
- a table that ends one page and goes on, without a header row, at the top of the next becomes one table, on
  the first page;
- a sentence that ends one page unfinished and goes on in lower case on the next is joined, on the first page.

A split that fails (markers missing, out of order, or the answer cut at the token budget) and a page whose share
of the answer fails the usual checks go to the one-page path (`pipeline.run_page`, with its ladder and fallback).
"""

from __future__ import annotations

import re
import time
from dataclasses import replace
from typing import Any

from services.core.errors import PagemillError
from services.core.logging import get_logger
from services.core.pdf import pdf_text_layer
from services.core.settings import Settings
from services.worker.engines.base import AnswerTokens, Engine, GenerativeEngine, PageInput
from services.worker.engines.vllm.presets import strip_fences
from services.worker.engines.vllm.token_confidence import slice_tokens
from services.worker.pipeline.inputs import CpuHypothesis, prepare_input
from services.worker.pipeline.page import PageOutcome, page_details, run_page, temperature_for, with_elements
from services.worker.pipeline.quality import has_words, invalid_reason, usable_text_layer

log = get_logger(__name__)

_MARKER = re.compile(r"^[ \t]*<!--\s*page\s+(\d+)\s*-->[ \t]*$", re.MULTILINE | re.IGNORECASE)
_TERMINAL = ".!?:;\"'”’»)]}…"
_NOT_PROSE = ("#", "|", "<", "$$", "- ", "* ", "+ ", ">", "```", "![")
_TABLE_OPEN = re.compile(r"^\s*<table[^>]*>\s*(?:<tbody[^>]*>\s*)?", re.IGNORECASE)
_TABLE_CLOSE = re.compile(r"\s*(?:</tbody>\s*)?</table>\s*$", re.IGNORECASE)


def split_pages(text: str, count: int) -> list[str] | None:
    """The answer of `count` pages as one Markdown text per page, or None when it is not marked page by page
    (markers 1..count in order, nothing before the first)."""
    text = strip_fences(text)
    markers = list(_MARKER.finditer(text))
    if [int(m.group(1)) for m in markers] != list(range(1, count + 1)) or text[:markers[0].start()].strip():
        return None
    ends = [m.start() for m in markers[1:]] + [len(text)]
    return mend_page_breaks([text[m.end():end].strip() for m, end in zip(markers, ends, strict=True)])


def mend_page_breaks(pages: list[str]) -> list[str]:
    """What runs across a page break kept whole, once, on the page where it starts."""
    pages = list(pages)
    for k in range(len(pages) - 1):
        pages[k], pages[k + 1] = _mend(pages[k], pages[k + 1])
    return pages


def _blocks(text: str) -> list[str]:
    return [b for b in re.split(r"\n\s*\n", text.strip()) if b.strip()]


def _words(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def _is_prose(block: str) -> bool:
    head = block.lstrip()
    return bool(head) and not head.startswith(_NOT_PROSE) and not re.match(r"\d+[.)]\s", head)


def _mend(first: str, second: str) -> tuple[str, str]:
    head, tail = _blocks(first), _blocks(second)
    if not head or not tail:
        return first, second
    last, top = head[-1], tail[0]
    if len(_words(top)) >= 12 and _words(top) in _words(last):  # the run-over text written on both pages
        return first, "\n\n".join(tail[1:])
    if _TABLE_CLOSE.search(last) and _TABLE_OPEN.match(top) and "<th" not in _first_row(top).lower():
        rows, after = _table_rows(top)
        if rows is not None:
            closing = _TABLE_CLOSE.search(last)
            assert closing is not None
            merged = last[:closing.start()] + "\n" + rows + last[closing.start():]
            return "\n\n".join([*head[:-1], merged]), "\n\n".join(([after] if after else []) + tail[1:])
    end, start = last.rstrip(), top.lstrip()
    if _is_prose(last) and _is_prose(top) and end[-1] not in _TERMINAL and start[0].islower():
        joined = end[:-1] + start if end.endswith("-") else end + " " + start  # a word hyphenated at the break
        return "\n\n".join([*head[:-1], joined]), "\n\n".join(tail[1:])
    return first, second


def _first_row(table: str) -> str:
    match = re.search(r"<tr[^>]*>.*?</tr>", table, re.IGNORECASE | re.DOTALL)
    return match.group(0) if match else ""


def _table_rows(block: str) -> tuple[str | None, str]:
    """The rows of the table at the top of `block` and what follows the table in that block."""
    end = re.search(r"</table>", block, re.IGNORECASE)
    opening = _TABLE_OPEN.match(block)
    if end is None or opening is None:
        return None, block
    inner = re.sub(r"\s*</tbody>\s*$", "", block[opening.end():end.start()], flags=re.IGNORECASE)
    return inner.strip(), block[end.end():].strip()


# Running a group -------------------------------------------------------------------------------------------------

def run_group(engine: GenerativeEngine, pages: list[PageInput], settings: Settings,
              heartbeat: Any = None) -> list[PageOutcome]:
    """The outcomes of consecutive pages read in one request (one per page, in order). `engine` is the vllm
    engine (it has `parse_group` and `page_output`)."""
    started = time.perf_counter()
    hypotheses = [CpuHypothesis(page, settings) for page in pages]
    layers = [pdf_text_layer(page.data) if page.is_pdf else "" for page in pages]
    prepared = [prepare_input(engine, replace(page, text_layer=layer, anchor=None, image=None), settings)
                for page, layer in zip(pages, layers, strict=True)]
    temperature = temperature_for(0, settings)
    try:
        answer = engine.parse_group(prepared, temperature=temperature)
    except PagemillError as exc:
        if exc.retryable:
            raise  # the backend is down or busy: the task makes the pages wait
        return _one_by_one(engine, pages, settings, heartbeat, reason=exc.code, shares=None)
    shares = _shares(answer.prompt_tokens, len(pages)), _shares(answer.completion_tokens, len(pages))
    group = {"pages": [p.index + 1 for p in pages], "prompt_tokens": answer.prompt_tokens,
             "completion_tokens": answer.completion_tokens, "finish_reason": answer.finish_reason, "ms": answer.ms}
    split = split_pages(answer.text, len(pages)) if answer.finish_reason != "length" else None
    if split is None:
        reason = "length" if answer.finish_reason == "length" else "no_page_markers"
        log.info("group.split_failed", document_id=pages[0].document_id, pages=group["pages"], reason=reason)
        return _one_by_one(engine, pages, settings, heartbeat, reason=reason, shares=shares, group=group)
    outcomes = []
    tokens = page_tokens(answer.tokens, len(pages))
    for i, (page, text) in enumerate(zip(prepared, split, strict=True)):
        output = engine.page_output(text, page, finish_reason=answer.finish_reason, model=answer.model,
                                    prompt_tokens=shares[0][i], completion_tokens=shares[1][i], ms=answer.ms,
                                    tokens=tokens[i])
        has_text = usable_text_layer(layers[i]) or has_words(_reading(hypotheses[i]))
        problem = invalid_reason(output.markdown, output.finish_reason,
                                 page_has_text=has_text and not output.details.get("empty"))
        if problem is not None:  # this page's share is no good: it is read again on its own
            alone = run_page(engine, pages[i], settings, heartbeat=heartbeat)
            outcomes.append(_with_group(alone, {**group, "split": "ok", "page_invalid": problem},
                                        shares[0][i], shares[1][i]))
            continue
        output = with_elements(output, hypotheses[i], pages[i])
        attempt = {"temperature": temperature, "rotation": page.rotation, "finish_reason": output.finish_reason,
                   "prompt_tokens": output.prompt_tokens, "completion_tokens": output.completion_tokens,
                   "invalid": None, "ms": answer.ms, "group": len(pages)}
        details = {**page_details(output, [attempt], {"prompt_tokens": output.prompt_tokens,
                                                  "completion_tokens": output.completion_tokens}, "none", None),
                   "group": {**group, "split": "ok"}}
        outcomes.append(PageOutcome(output=output, attempts=1, latency_ms=int((time.perf_counter() - started) * 1000),
                                    details=details))
    return outcomes


def page_tokens(tokens: AnswerTokens | None, count: int) -> list[AnswerTokens | None]:
    """Each page's share of a group answer's tokens: those written between its marker and the next."""
    markers = list(_MARKER.finditer(tokens.text)) if tokens is not None else []
    if tokens is None or [int(m.group(1)) for m in markers] != list(range(1, count + 1)):
        return [None] * count
    ends = [m.start() for m in markers[1:]] + [len(tokens.text)]
    return [slice_tokens(tokens, marker.end(), end) for marker, end in zip(markers, ends, strict=True)]


def _reading(hypothesis: CpuHypothesis) -> str:
    try:
        return hypothesis.output().markdown
    except Exception:  # noqa: BLE001 - no cpu reading: the page is judged by its text layer alone
        return ""


def _one_by_one(engine: Engine, pages: list[PageInput], settings: Settings, heartbeat: Any, *, reason: str,
                shares: tuple[list[int], list[int]] | None, group: dict[str, Any] | None = None) -> list[PageOutcome]:
    outcomes = []
    for i, page in enumerate(pages):
        outcome = run_page(engine, page, settings, heartbeat=heartbeat)
        if shares is None:
            outcomes.append(_with_group(outcome, {**(group or {}), "split": reason}, 0, 0))
        else:
            outcomes.append(_with_group(outcome, {**(group or {}), "split": reason}, shares[0][i], shares[1][i]))
    return outcomes


def _with_group(outcome: PageOutcome, group: dict[str, Any], prompt_tokens: int,
                completion_tokens: int) -> PageOutcome:
    """A page read alone after its group: the group request's share of tokens is part of what it cost."""
    output = replace(outcome.output, prompt_tokens=outcome.output.prompt_tokens + prompt_tokens,
                     completion_tokens=outcome.output.completion_tokens + completion_tokens)
    return replace(outcome, output=output, details={**outcome.details, "group": group})


def _shares(total: int, count: int) -> list[int]:
    """`total` tokens split over `count` pages (the remainder on the first), so the pages add up to vLLM's count."""
    base, rest = divmod(total, count)
    return [base + (rest if i == 0 else 0) for i in range(count)]
