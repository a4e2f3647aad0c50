"""The engine interface: one page in, one result out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

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
    # What the reader should know about the page: `text_dropped` (the page holds text the output lost).
    warnings: list[str] = field(default_factory=list)


class Engine(Protocol):
    """One page in, one result out. One attempt: no retries, no storage, no queue."""

    name: str
    needs_text_layer: bool  # the pipeline extracts the page's text layer into PageInput.text_layer
    needs_image: bool  # the pipeline renders the page into PageInput.image

    def parse(self, page: PageInput, *, temperature: float = 0.0) -> PageOutput: ...

    def check_health(self) -> None:
        """Raises `EngineUnavailable` when the engine cannot take pages now."""
        ...
