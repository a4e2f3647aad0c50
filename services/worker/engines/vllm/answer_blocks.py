"""A model's Markdown answer split into blocks — headings, lists, HTML and pipe tables, `$$` formulas, code fences,
figures, paragraphs — as elements without boxes (the aligner gives them theirs).

Every line of the answer lands in exactly one block, so `page_markdown` of the blocks gives the answer back
with its blocks one blank line apart: nothing a model wrote is dropped by the split.

Models that write a chart as its data table (the mission's output spec; any preset whose model does it) get the
table kept under the chart: a table marked as a chart's (`<table data-chart>`, `class="chart…"`), or a table
right under a figure whose alt text names a chart, graph or plot, becomes that figure's `html`, `derived`
(not printed on the page) with `chart` set; a marked table with no figure above it is a chart figure itself.
"""

from __future__ import annotations

import html
import re
from typing import Any

from services.core.elements import Element, ElementType, element_id

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_LIST_ITEM = re.compile(r"^\s{0,3}(?:[-*+]|(\d{1,9})[.)])\s+(.*)$")
_TABLE_OPEN = re.compile(r"^\s*<table\b", re.IGNORECASE)
_TABLE_CLOSE = re.compile(r"</table\s*>", re.IGNORECASE)
_PIPE_ROW = re.compile(r"^\s*\|.*\|\s*$")
_PIPE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_FIGURE = re.compile(r"^\s*!\[(?P<alt>[^\]]*)\]\([^)]*\)\s*$")
_CAPTION = re.compile(r"^\s*(?:\*\*|_)?(table|tab\.|figure|fig\.|chart|scheme|listing|algorithm)\s*[\dIVX]+[:.\s]",
                      re.IGNORECASE)
_TAG = re.compile(r"<[^>]+>")
_INLINE_MARKUP = re.compile(r"[*_`~]+|\\(?=[\\`*_{}\[\]()#+\-.!|$])")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_CHART_TABLE = re.compile(r"^\s*<table\b[^>]*(?:\bdata-chart\b|\bclass\s*=\s*[\"'][^\"']*\bchart)", re.IGNORECASE)
_CHART_ALT = re.compile(r"\b(chart|graph|plot|histogram)s?\b", re.IGNORECASE)
_CHART_KIND = re.compile(r"\b(bar|line|pie|scatter|area)\b", re.IGNORECASE)


# olmOCR names a figure after where it sits in the rendered image: page_{x}_{y}_{width}_{height}.png (pixels).
_FIGURE_PLACE = re.compile(r"page_(\d+(?:\.\d+)?)_(\d+(?:\.\d+)?)_(\d+(?:\.\d+)?)_(\d+(?:\.\d+)?)\.png")


def figure_pixels(markdown: str) -> tuple[float, float, float, float] | None:
    """The box, in pixels of the image the model saw, that a figure's file name gives, or None."""
    match = _FIGURE_PLACE.search(markdown)
    if match is None:
        return None
    x, y, width, height = (float(v) for v in match.groups())
    return (x, y, x + width, y + height) if width > 0 and height > 0 else None


def plain_text(markdown: str) -> str:
    """The words a reader sees: tags, emphasis and link targets gone, entities decoded."""
    text = _LINK.sub(r"\1", markdown)
    text = _TAG.sub(" ", text)
    text = _INLINE_MARKUP.sub("", text)
    return re.sub(r"[ \t]+", " ", html.unescape(text)).strip()


def split_answer(markdown: str, *, page: int = 1) -> list[Element]:
    """The answer's blocks in order, typed, with `bbox` None."""
    lines = markdown.replace("\r\n", "\n").split("\n")
    elements: list[Element] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if not line.strip():
            index += 1
            continue
        end, kind = _block_end(lines, index)
        source = "\n".join(lines[index:end]).strip()
        index = end
        if source:
            elements.append(_element(kind, source, page, len(elements) + 1, first_heading=not any(
                e.type in (ElementType.TITLE, ElementType.HEADING) for e in elements)))
    return fold_chart_tables(elements, page)


def fold_chart_tables(elements: list[Element], page: int) -> list[Element]:
    """Chart data tables kept under their chart (see the module's docstring); ids renumbered."""
    folded: list[Element] = []
    for element in elements:
        if element.type is not ElementType.TABLE:
            folded.append(element)
            continue
        marked = bool(_CHART_TABLE.match(element.markdown))
        above = folded[-1] if folded else None
        if above is not None and above.type is ElementType.FIGURE and above.html is None and (
                marked or _CHART_ALT.search(above.text)):
            folded[-1] = above.model_copy(update={
                "markdown": above.markdown + "\n\n" + element.markdown, "html": element.html, "derived": True,
                "chart": _chart_kind(above.text)})
        elif marked:
            folded.append(element.model_copy(update={"type": ElementType.FIGURE, "derived": True, "chart": "chart"}))
        else:
            folded.append(element)
    return [e.model_copy(update={"id": element_id(page, n)}) for n, e in enumerate(folded, 1)]


def _chart_kind(alt: str) -> str:
    kind = _CHART_KIND.search(alt)
    return kind.group(1).lower() if kind else "chart"


def _block_end(lines: list[str], start: int) -> tuple[int, str]:
    """Where the block starting at `start` ends (exclusive), and what it is."""
    line = lines[start]
    stripped = line.strip()
    fence = _FENCE.match(line)
    if fence:
        marker = fence.group(1)
        for end in range(start + 1, len(lines)):
            if lines[end].strip().startswith(marker):
                return end + 1, "code"
        return len(lines), "code"
    if stripped.startswith("$$") or stripped.startswith("\\["):
        closer = "$$" if stripped.startswith("$$") else "\\]"
        if len(stripped) > 2 and stripped.endswith(closer) and stripped != closer:
            return start + 1, "formula"
        for end in range(start + 1, len(lines)):
            if lines[end].strip().endswith(closer):
                return end + 1, "formula"
            if not lines[end].strip():
                break
        return start + 1, "paragraph"  # never closed: text that happens to start with $$
    if _TABLE_OPEN.match(line):
        for end in range(start, len(lines)):
            if _TABLE_CLOSE.search(lines[end]):
                return end + 1, "table"
        return len(lines), "table"
    if _PIPE_ROW.match(line) and start + 1 < len(lines) and _PIPE_RULE.match(lines[start + 1]):
        end = start + 2
        while end < len(lines) and _PIPE_ROW.match(lines[end]):
            end += 1
        return end, "pipe_table"
    if _HEADING.match(line):
        return start + 1, "heading"
    if _FIGURE.match(line):
        return start + 1, "figure"
    item = _LIST_ITEM.match(line)
    if item:
        numbered = item.group(1) is not None

        def other_list(candidate: str) -> bool:  # a bullet after numbers (or the reverse) starts a new list
            found = _LIST_ITEM.match(candidate)
            return found is not None and not candidate.startswith("  ") and (found.group(1) is not None) != numbered

        end = start + 1
        while end < len(lines):
            following = lines[end]
            if not following.strip():
                # A blank line inside a loose list: the list goes on if the next line is an item or indented.
                after = end + 1
                if after < len(lines) and not other_list(lines[after]) and (
                        _LIST_ITEM.match(lines[after]) or lines[after].startswith("  ")):
                    end = after
                    continue
                break
            if other_list(following) or _starts_block(following) and not _LIST_ITEM.match(following):
                break
            end += 1
        return end, "list"
    end = start + 1
    while end < len(lines) and lines[end].strip() and not _starts_block(lines[end]):
        end += 1
    return end, "paragraph"


def _starts_block(line: str) -> bool:
    stripped = line.strip()
    return bool(_FENCE.match(line) or stripped.startswith("$$") or stripped.startswith("\\[")
                or _TABLE_OPEN.match(line) or _HEADING.match(line) or _LIST_ITEM.match(line)
                or _FIGURE.match(line) or _PIPE_ROW.match(line))


def _element(kind: str, source: str, page: int, n: int, *, first_heading: bool) -> Element:
    def make(element_type: ElementType, text: str, **extra: Any) -> Element:
        return Element(id=element_id(page, n), type=element_type, page=page, bbox=None, text=text,
                       markdown=source, **extra)

    if kind == "code":
        return make(ElementType.CODE, "\n".join(source.split("\n")[1:-1]) if "\n" in source else source)
    if kind == "formula":
        latex = source.removeprefix("$$").removesuffix("$$").removeprefix("\\[").removesuffix("\\]").strip()
        return make(ElementType.FORMULA, latex, latex=latex)
    if kind == "table":
        return make(ElementType.TABLE, plain_text(source), html=source)
    if kind == "pipe_table":
        table = pipe_table_html(source)
        return make(ElementType.TABLE, plain_text(table), html=table)
    heading = _HEADING.match(source)
    if kind == "heading" and heading:
        level = len(heading.group(1))
        title = page == 1 and level == 1 and first_heading
        return make(ElementType.TITLE if title else ElementType.HEADING, plain_text(heading.group(2)), level=level)
    if kind == "figure":
        figure = _FIGURE.match(source)
        return make(ElementType.FIGURE, figure.group("alt") if figure else "")
    if kind == "list":
        items, ordered = _list_items(source)
        return make(ElementType.LIST, "\n".join(plain_text(i) for i in items), items=items, ordered=ordered)
    return make(ElementType.CAPTION if _CAPTION.match(source) else ElementType.PARAGRAPH, plain_text(source))


def _list_items(source: str) -> tuple[list[str], bool]:
    items: list[list[str]] = []
    ordered = False
    for line in source.split("\n"):
        match = _LIST_ITEM.match(line)
        if match and (not line.startswith("  ") or not items):
            items.append([match.group(2)])
            ordered = ordered or match.group(1) is not None
        elif items and line.strip():
            items[-1].append(line.strip())
    return [" ".join(parts) for parts in items], ordered


def pipe_table_html(source: str) -> str:
    """A Markdown pipe table as an HTML table: the first row the header, cell text escaped."""
    rows = [line for line in source.split("\n") if line.strip() and not _PIPE_RULE.match(line)]
    cells = [[html.escape(cell.strip()) for cell in row.strip().strip("|").split("|")] for row in rows]
    if not cells:
        return "<table></table>"
    head = "".join(f"<th>{cell}</th>" for cell in cells[0])
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in cells[1:])
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
