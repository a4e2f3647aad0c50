"""The engine interface: one page in, one result out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, TypeGuard

from services.core.elements import BBox, Element
from services.core.pdf import PDF

DEFAULT_RENDER_SIDE = 1288  # px, the longest side of a page image sent to a model unless a preset or setting says


@dataclass(frozen=True, slots=True)
class PageInput:
    document_id: str
    index: int
    media_type: str  # application/pdf (a single-page PDF) or image/* (the page image)
    data: bytes
    text_layer: str | None = None  # embedded text, filled in for engines that ask for it
    image: bytes | None = None  # rendered PNG, filled in for engines that ask for pixels
    rotation: int = 0  # extra clockwise rotation to render with (a preset may report a turned page)
    anchor: str | None = None  # text already read from the page (text layer or OCR), for engines that prompt

    @property
    def is_pdf(self) -> bool:
        return self.media_type == PDF


@dataclass(frozen=True, slots=True)
class PageWord:
    """One word of the page, boxed in top-left page points: what a model's answer is aligned to."""

    text: str
    bbox: BBox


@dataclass(frozen=True, slots=True)
class AnswerTokens:
    """The tokens a model wrote and their log-probabilities, placed on its answer: token i wrote
    `text[spans[i][0]:spans[i][1]]` (an empty span: a token that wrote no character of it)."""

    text: str
    spans: tuple[tuple[int, int], ...]
    logprobs: tuple[float, ...]


@dataclass(slots=True)
class PageOutput:
    markdown: str
    engine: str
    model: str = ""
    finish_reason: str = "stop"
    prompt_tokens: int = 0
    completion_tokens: int = 0
    confidence: float | None = None
    signals: dict[str, float] = field(default_factory=dict)
    rotation: int = 0
    width_px: int = 0
    height_px: int = 0
    details: dict[str, Any] = field(default_factory=dict)
    # The page as displayed, in PDF points (image uploads: pixels, 1 px = 1 pt); 0 when the engine cannot tell.
    width: float = 0.0
    height: float = 0.0
    elements: list[Element] = field(default_factory=list)  # reading order; `markdown` is their rendering
    words: list[PageWord] = field(default_factory=list)  # the page's words in reading order (not stored)
    tokens: AnswerTokens | None = None  # a model's tokens and their log-probabilities (not stored)
    # What the reader should know about the page: `text_dropped` (the page holds text the output lost).
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class GroupAnswer:
    """The answer to one request of several pages, before it is split into pages."""

    text: str
    finish_reason: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    ms: int
    tokens: AnswerTokens | None = None  # the answer's tokens and log-probabilities, when the server gave them


class Engine(Protocol):
    """One page in, one result out. One attempt: no retries, no storage, no queue."""

    name: str
    needs_text_layer: bool  # the pipeline extracts the page's text layer into PageInput.text_layer
    needs_image: bool  # the pipeline renders the page into PageInput.image
    generative: bool  # True: a model whose answers are checked and retried; the engine is a `GenerativeEngine`

    def parse(self, page: PageInput, *, temperature: float = 0.0) -> PageOutput: ...

    def check_health(self) -> None:
        """Raises `EngineUnavailable` when the engine cannot take pages now."""
        ...


class PresetFacts(Protocol):
    """What the pipeline reads of a generative engine's preset (`services/worker/presets.py`)."""

    @property
    def name(self) -> str: ...

    @property
    def reports_rotation(self) -> bool:
        """The model says whether the page was turned, and how far (its answer's `rotation_*` details)."""
        ...


class GenerativeEngine(Engine, Protocol):
    """A model behind a server (vllm): every member the pipeline, the group runner and the tasks read.

    Its answers may be bad, so the pipeline checks them, climbs the temperature ladder and may fall back to the
    cpu engine's reading; several consecutive pages may go in one request (`parse_group`, then `page_output`
    per page).
    """

    model: str  # the served model, recorded on each page and on a fallback as `primary_model`
    render_longest_side: int  # px: the longest side the pipeline renders a page at for this model
    needs_anchor: bool  # the pipeline fills PageInput.anchor (text layer or the cpu engine's OCR)

    @property
    def preset(self) -> PresetFacts: ...

    def parse_group(self, pages: list[PageInput], *, temperature: float = 0.0) -> GroupAnswer:
        """One request for consecutive `pages` (images filled in, in order): the raw answer, split by the caller."""
        ...

    def page_output(self, text: str, page: PageInput, *, finish_reason: str, model: str, prompt_tokens: int,
                    completion_tokens: int, ms: int, tokens: AnswerTokens | None = None) -> PageOutput:
        """One page's answer `text` (alone, or its part of a group's) as the page's output; `tokens`: the
        tokens that wrote it, with their log-probabilities."""
        ...


def is_generative(engine: Engine) -> TypeGuard[GenerativeEngine]:
    """The engine declares itself generative: its full interface is `GenerativeEngine`."""
    return engine.generative
