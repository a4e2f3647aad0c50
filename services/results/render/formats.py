"""Every output format of a document from its page entries: what assembly stores and `pagemill parse` writes."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from services.core.errors import DETAIL_CHARS, describe
from services.core.logging import get_logger
from services.core.pages import PageEntry
from services.core.settings import OutputFormat, Settings
from services.results.render.chunks import render_chunks
from services.results.render.derive import RenderPage, document_pages
from services.results.render.html import render_html
from services.results.render.latex import render_latex
from services.results.render.markdown import render_markdown

log = get_logger(__name__)
ALWAYS = (OutputFormat.MARKDOWN, OutputFormat.JSON)
ORDER = list(OutputFormat)


@dataclass(slots=True)
class Rendered:
    bodies: dict[str, bytes] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def formats(self) -> list[str]:
        """The parse formats in their order, then a model task's answer (`extraction`, …) if there is one."""
        parse = [f.value for f in ORDER]
        return [f for f in parse if f in self.bodies] + [f for f in self.bodies if f not in parse]


def wanted(settings: Settings, only: list[str] | None = None) -> list[OutputFormat]:
    chosen = {OutputFormat(f) for f in only} if only else set(settings.outputs.formats) | set(ALWAYS)
    return [f for f in ORDER if f in chosen]


def render_document(entries: list[PageEntry], body: dict[str, Any], settings: Settings,
                    only: list[str] | None = None, extra: dict[str, bytes] | None = None,
                    figures: dict[str, bytes] | None = None, keep_furniture: bool = False) -> Rendered:
    """`entries`: the page entries (`PageEntry`, core/pages.py); `body`: the document JSON, which gets `formats`;
    `extra`: bodies made elsewhere (a model task's answer), stored and listed with the rest; `figures`: the
    figures' images by path (`figures/p3-e5.png`), inlined in the HTML within `outputs.figure_html_inline_mb`;
    `keep_furniture`: page headers and footers stay in LaTeX and chunks, marked (the HTML always has them)."""
    formats = wanted(settings, only)
    out = Rendered()
    clock = time.perf_counter()
    pages = document_pages(entries) if set(formats) - set(ALWAYS) else []
    derive_s = time.perf_counter() - clock
    title = str(body.get("filename") or body.get("id") or "document")
    for fmt in formats:
        started = time.perf_counter()
        try:
            data = _render(fmt, entries, pages, body, title, settings, figures or {}, keep_furniture)
        except Exception as exc:  # a renderer's bug must not hold the Markdown and JSON back
            if fmt in ALWAYS:
                raise
            log.error("render.failed", format=fmt.value, document_id=body.get("id"),
                      error=describe(exc, DETAIL_CHARS))
            continue
        if data is not None:
            out.bodies[fmt.value] = data
        out.seconds[fmt.value] = time.perf_counter() - started
    out.seconds["elements"] = derive_s
    out.bodies.update(extra or {})
    if OutputFormat.JSON in formats:
        parse = [f.value for f in ORDER if f.value in out.bodies or f is OutputFormat.JSON]
        body["formats"] = parse + [f for f in out.bodies if f not in {x.value for x in ORDER}]
        out.bodies[OutputFormat.JSON.value] = json.dumps(body, ensure_ascii=False).encode()
    return out


def _render(fmt: OutputFormat, entries: list[PageEntry], pages: list[RenderPage], body: dict[str, Any],
            title: str, settings: Settings, figures: dict[str, bytes], keep_furniture: bool) -> bytes | None:
    if fmt is OutputFormat.MARKDOWN:
        return render_markdown(entries).encode()
    if fmt is OutputFormat.HTML:
        budget = int(settings.outputs.figure_html_inline_mb * 1024 * 1024)
        return render_html(pages, title=title, figures=figures, inline_budget=budget).encode()
    if fmt is OutputFormat.LATEX:
        return render_latex(pages, title=title, keep_furniture=keep_furniture).encode()
    if fmt is OutputFormat.CHUNKS:
        cfg = settings.outputs
        chunks = render_chunks(pages, max_tokens=cfg.chunk_max_tokens, tokenizer=cfg.chunk_tokenizer.value,
                               split_tables=cfg.chunk_split_tables, keep_furniture=keep_furniture)
        return json.dumps({"document_id": body.get("id"), **chunks}, ensure_ascii=False).encode()
    return None  # json: written last, with the list of formats
