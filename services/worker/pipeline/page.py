"""What happens to one page between fetching it and storing its result: inputs prepared, the engine run, timed.

For a generative engine (vllm) this is also where no bad page slips through (the olmOCR recipe): every
answer is checked (`finish_reason == "length"`, a repetition loop, empty on a page with text); an invalid one
is tried again up the temperature ladder, a page the model says is turned is rendered turned and tried again,
and after the last attempt the page takes the cpu engine's reading, flagged `is_fallback` with the reason.
An unavailable backend (`EngineUnavailable`) is not a bad answer: it goes up to the task, which makes the page
wait and retry later.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from services.core.elements import Element, ElementType, page_markdown
from services.core.errors import PagemillError, clip
from services.core.logging import get_logger
from services.core.metrics import FALLBACK_PAGES, PAGE_RETRIES, PAGE_STAGE, stage_timer
from services.core.pdf import pdf_text_layer
from services.core.settings import Settings
from services.worker.engines.base import (
    Engine,
    GenerativeEngine,
    PageInput,
    PageOutput,
    is_generative,
)
from services.worker.engines.geometry import Box, pixel_map
from services.worker.engines.vllm.align import align
from services.worker.engines.vllm.answer_blocks import figure_pixels, split_answer
from services.worker.engines.vllm.token_confidence import score_elements
from services.worker.pipeline.inputs import CpuHypothesis, prepare_input, render_side
from services.worker.pipeline.prepare import preparing_turns
from services.worker.pipeline.quality import clip_anchor, has_words, invalid_reason, usable_text_layer

if TYPE_CHECKING:
    from services.worker.pipeline.prepare import Preparer

log = get_logger(__name__)


@dataclass(frozen=True, slots=True)
class PageOutcome:
    output: PageOutput
    attempts: int
    latency_ms: int
    is_fallback: bool = False
    fallback_reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)  # the attempt log, the anchor, tokens spent


def run_page(engine: Engine, page: PageInput, settings: Settings, heartbeat: Callable[[], None] | None = None,
             preparer: Preparer | None = None) -> PageOutcome:
    """`heartbeat` is called before every retry of a generative page (the task keeps the page's lease).
    `preparer`: a generative page's inputs are made by its pool, within its bound on pages in hand."""
    if is_generative(engine):
        if preparer is None:
            return _run_generative(engine, page, settings, time.perf_counter(), heartbeat)
        with preparer.hold():
            return _run_generative(engine, page, settings, time.perf_counter(), heartbeat, preparer)
    started = time.perf_counter()
    with stage_timer("render", engine.name):
        prepared = prepare_input(engine, page, settings)
    with stage_timer("engine", engine.name):
        output = engine.parse(prepared)
    return PageOutcome(output=output, attempts=1, latency_ms=_ms(started))


def temperature_for(attempt: int, settings: Settings) -> float:
    ladder = settings.engine.temperatures or [0.0]
    return float(ladder[min(attempt, len(ladder) - 1)])


def _run_generative(engine: GenerativeEngine, page: PageInput, settings: Settings, started: float,
                    heartbeat: Callable[[], None] | None = None, preparer: Preparer | None = None) -> PageOutcome:
    cpu = CpuHypothesis(page, settings)
    image = None
    if preparer is None:
        with preparing_turns(settings).turn(engine.name):
            text_layer = pdf_text_layer(page.data) if page.is_pdf else ""
            with stage_timer("anchor", engine.name):  # the text layer, or the cpu engine's OCR of a scan
                anchor, anchor_source = _anchor(text_layer, cpu, settings)
            with stage_timer("render", engine.name):  # ready for the request before its turn ends
                image = prepare_input(engine, replace(page, text_layer=text_layer, anchor=anchor), settings).image
    else:
        text_layer, image = _prepared(preparer, engine, page, cpu, settings)
        anchor, anchor_source = _anchor(text_layer, cpu, settings)
    # An empty answer is wrong only where the page visibly has text.
    page_has_text = usable_text_layer(text_layer) or has_words(anchor)
    current = replace(page, text_layer=text_layer, anchor=anchor, image=image)
    attempts: list[dict[str, Any]] = []
    spent = {"prompt_tokens": 0, "completion_tokens": 0}
    reason = ""
    max_attempts = settings.engine.max_attempts
    for attempt in range(max_attempts):
        if attempt and heartbeat is not None:
            heartbeat()
        temperature = temperature_for(attempt, settings)
        if current.image is None:  # not prepared, or to be rendered again (turned): by the pool if there is one
            with stage_timer("render", engine.name):
                if preparer is not None:
                    current = replace(current, image=preparer.render(current, render_side(engine, settings)))
                prepared = prepare_input(engine, current, settings)
        else:
            prepared = prepare_input(engine, current, settings)
        try:
            with stage_timer("engine", engine.name):
                output = engine.parse(prepared, temperature=temperature)
        except PagemillError as exc:
            if exc.retryable:
                raise  # the backend is down or busy: the task makes the page wait, nothing is wasted
            reason = exc.code  # the server refused this page; asking again the same way will not help
            attempts.append({"temperature": temperature, "rotation": current.rotation, "error": exc.code,
                             "message": clip(str(exc))})
            break
        spent["prompt_tokens"] += output.prompt_tokens
        spent["completion_tokens"] += output.completion_tokens
        # A model that says the page holds no text (`empty`) is taken at its word: that is an answer, not a bad one.
        problem = invalid_reason(output.markdown, output.finish_reason,
                                 page_has_text=page_has_text and not output.details.get("empty"))
        turn = _rotation_correction(engine, output)
        if problem is None and turn:
            problem = "rotation"
            current = replace(current, rotation=(current.rotation + turn) % 360, image=None)
        attempts.append({"temperature": temperature, "rotation": prepared.rotation,
                         "finish_reason": output.finish_reason, "prompt_tokens": output.prompt_tokens,
                         "completion_tokens": output.completion_tokens, "invalid": problem,
                         "ms": output.details.get("request_ms")})
        if problem is None:
            with stage_timer("align", engine.name):
                output = with_elements(output, cpu, page)
            details = page_details(output, attempts, spent, anchor_source, anchor)
            return PageOutcome(output=_with_tokens(output, spent), attempts=len(attempts),
                               latency_ms=_ms(started), details=details)
        reason = problem
        if attempt + 1 < max_attempts:
            PAGE_RETRIES.labels(reason=problem).inc()
            log.info("page.generation_invalid", document_id=page.document_id, index=page.index, reason=problem,
                     attempt=attempt + 1, temperature=temperature)
    return _fall_back(cpu, reason, attempts, spent, anchor_source, anchor, started, engine)


def _prepared(preparer: Preparer, engine: GenerativeEngine, page: PageInput, cpu: CpuHypothesis,
              settings: Settings) -> tuple[str, bytes | None]:
    """The page's text layer and PNG from the preparer's pool, its cpu reading handed to `cpu`. Stages: `prepare`
    is the wait in this thread (queue and work), `anchor` and `render` the pool process's own time."""
    with stage_timer("prepare", engine.name):
        ready = preparer.prepare(replace(page, image=None, anchor=None), render_side(engine, settings))
    PAGE_STAGE.labels(stage="anchor", engine=engine.name).observe(ready.reading_s)
    PAGE_STAGE.labels(stage="render", engine=engine.name).observe(ready.render_s)
    if ready.reading is not None:
        cpu.reading_made(ready.reading)
    text_layer = ready.text_layer
    if text_layer is None:  # the pool could not read it: here, where the error is the page's
        text_layer = pdf_text_layer(page.data) if page.is_pdf else ""
    return text_layer, ready.image


def run_fallback(page: PageInput, settings: Settings, reason: str) -> PageOutcome:
    """The cpu engine's reading of a page whose primary engine gave up (e.g. an outage outlasted its retries)."""
    started = time.perf_counter()
    return _fall_back(CpuHypothesis(page, settings), reason, [], {}, "none", None, started, None)


def _fall_back(cpu: CpuHypothesis, reason: str, attempts: list[dict[str, Any]], spent: dict[str, int],
               anchor_source: str, anchor: str | None, started: float, engine: Engine | None) -> PageOutcome:
    FALLBACK_PAGES.labels(reason=reason or "unknown").inc()
    log.warning("page.fallback", document_id=cpu.page.document_id, index=cpu.page.index, reason=reason,
                attempts=len(attempts))
    output = cpu.output()
    details = page_details(output, attempts, spent, anchor_source, anchor)
    details["fallback_reason"] = reason
    if engine is not None:
        details["primary_engine"] = engine.name
        details["primary_model"] = engine.model if is_generative(engine) else ""
        details["primary_finish_reason"] = next((a.get("finish_reason") for a in reversed(attempts)
                                                 if a.get("finish_reason")), None)
    return PageOutcome(output=_with_tokens(output, spent), attempts=len(attempts), latency_ms=_ms(started),
                       is_fallback=True, fallback_reason=reason, details=details)


def page_anchor(page: PageInput, settings: Settings) -> tuple[str | None, str]:
    """The anchor the engine sends for a page and its source, as `_run_generative` builds it: what specsim
    measures (`pagemill_eval/specsim`), so the simulation and the engine cannot drift apart."""
    text_layer = pdf_text_layer(page.data) if page.is_pdf else ""
    return _anchor(text_layer, CpuHypothesis(page, settings), settings)


def _anchor(text_layer: str, cpu: CpuHypothesis, settings: Settings) -> tuple[str | None, str]:
    """`auto`: the cpu engine's reading of the page — its Markdown of the text layer when it trusts it, its OCR
    otherwise — which is laid out as a model writes the page (reading order, headings, tables), so more of the
    model's n-grams are found in the prompt than in the raw text layer (docs/benchmarks.md, specsim). The
    reading is made anyway, to box the answer's blocks. `text_layer`: a usable text layer only."""
    mode, budget = settings.engine.anchor, settings.engine.anchor_max_chars
    if mode == "none":
        return None, "none"
    if mode == "auto":
        try:
            reading = cpu.output()
        except Exception as exc:  # noqa: BLE001 - no cpu reading is no reason to send no anchor
            log.warning("page.anchor_reading_failed", document_id=cpu.page.document_id, index=cpu.page.index,
                        error=str(exc))
        else:
            if has_words(reading.markdown, 1):
                return clip_anchor(reading.markdown, budget), str(reading.details.get("source") or "ocr")
    if usable_text_layer(text_layer):
        return clip_anchor(text_layer, budget), "text_layer"
    return None, "none"


def with_elements(output: PageOutput, cpu: CpuHypothesis, page: PageInput) -> PageOutput:
    """A model's answer as the page's element tree: its blocks, each boxed by the page words it matches (the
    cpu engine's reading: the text layer, or OCR for a scan). The page's Markdown becomes the blocks' rendering
    (the same text, one blank line between blocks). A model that boxed its answer itself keeps its boxes. Each
    block's confidence comes from the model's token log-probabilities and its agreement with that reading."""
    if output.elements:
        return _scored(replace(output, markdown=_rendered(output.elements)), output.elements, has_reading=False)
    blocks = split_answer(output.markdown, page=page.index + 1)
    try:
        reading = cpu.output()
    except Exception as exc:  # noqa: BLE001 - no words to align to is no reason to lose the model's answer
        log.warning("page.align_failed", document_id=page.document_id, index=page.index, error=str(exc))
        return _scored(replace(output, elements=blocks, markdown=_rendered(blocks)), blocks, has_reading=False)
    elements = _place_figures(align(blocks, reading.words), output, reading)
    boxed = sum(1 for e in elements if e.bbox is not None)
    details = {**output.details, "elements_boxed": boxed, "elements": len(elements)}
    return _scored(replace(output, markdown=_rendered(elements), width=reading.width, height=reading.height,
                           details=details), elements, has_reading=bool(reading.words))


def _scored(output: PageOutput, elements: list[Element], *, has_reading: bool) -> PageOutput:
    scored, confidence, signals = score_elements(elements, output.tokens, reading_has_words=has_reading)
    return replace(output, elements=scored, confidence=confidence, signals={**output.signals, **signals})


def _place_figures(elements: list[Element], output: PageOutput, reading: PageOutput) -> list[Element]:
    """Figures the model placed itself (olmOCR's page_x_y_w_h.png names, in pixels of the image it saw)."""
    placed: list[Element] = []
    for element in elements:
        pixels = figure_pixels(element.markdown) if element.type == ElementType.FIGURE else None
        if pixels is not None and output.width_px and reading.width:
            to_page = pixel_map(output.width_px, output.height_px, output.rotation, reading.width, reading.height)
            element = element.model_copy(update={"bbox": to_page(Box(*pixels))})
        placed.append(element)
    return placed


def _rendered(elements: list[Element]) -> str:
    body = page_markdown(elements)
    return body + "\n" if body else ""


def _rotation_correction(engine: GenerativeEngine, output: PageOutput) -> int:
    if not engine.preset.reports_rotation or output.details.get("rotation_valid", True):
        return 0
    return int(output.details.get("rotation_correction") or 0) % 360


def page_details(output: PageOutput, attempts: list[dict[str, Any]], spent: dict[str, int], anchor_source: str,
             anchor: str | None) -> dict[str, Any]:
    """The details a page result carries: attempts, the anchor sent and its source, tokens spent."""
    return {"attempt_log": attempts, "anchor_source": anchor_source, "anchor_chars": len(anchor or ""),
            "tokens_spent": dict(spent), **output.details}


def _with_tokens(output: PageOutput, spent: dict[str, int]) -> PageOutput:
    """The page's token counts are what all its generations cost, the failed ones included."""
    if not spent:
        return output
    return replace(output, prompt_tokens=spent["prompt_tokens"], completion_tokens=spent["completion_tokens"])


def _ms(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)
