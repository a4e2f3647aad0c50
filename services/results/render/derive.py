"""A page's element tree: the engine's own (`page["elements"]`) when it gave one, else derived from its Markdown.

The derivation is a line-based Markdown block parser (ATX headings, lists, HTML and pipe tables, `$$`/`\\[`
display formulas, code fences, images, paragraphs). It knows no coordinates, so every derived element has
`bbox: null` — never a made-up box. Each element keeps its block's Markdown source, so rendering the
elements in order gives the page's Markdown back.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from typing import Any

from services.core.elements import Element, ElementType, element_id
from services.core.pages import PageEntry, PageErrorEntry, entry_elements

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})[ \t]*([\w+#.-]*)")
_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$")
_LIST_ITEM = re.compile(r"^ {0,3}([-*+]|\d{1,9}[.)])[ \t]+(.*)$")
_PIPE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{1,}:?\s*(\|\s*:?-{1,}:?\s*)*\|?\s*$")
_IMAGE = re.compile(r"^\s*!\[([^\]]*)\]\([^)]*\)\s*$")
_COMMENT = re.compile(r"^\s*<!--.*?-->\s*$", re.DOTALL)
_TAG = re.compile(r"<[^>]+>")
_MD_MARKS = re.compile(r"[*_`~]+|!?\[([^\]]*)\]\([^)]*\)")
_WHOLE_INLINE_MATH = re.compile(r"^\s*\$(?!\$)([^$]+)\$\s*$")


@dataclass(slots=True)
class RenderPage:
    """One page as the renderers see it."""

    number: int
    status: str
    elements: list[Element] = field(default_factory=list)
    width: float | None = None
    height: float | None = None
    error: PageErrorEntry | None = None


def document_pages(entries: list[PageEntry]) -> list[RenderPage]:
    """The pages of an assembled document (their `PageEntry`s) with their elements."""
    return [RenderPage(number=int(entry["page_number"]), status=str(entry["status"]),
                       elements=page_elements(entry) if entry["status"] == "succeeded" else [],
                       width=entry.get("width"), height=entry.get("height"), error=entry.get("error"))
            for entry in entries]


def page_elements(entry: PageEntry) -> list[Element]:
    given = entry.get("elements")
    # An engine that gave no tree (the fake engine, results cached before trees existed): read its Markdown.
    if given or not (entry.get("markdown") or "").strip():
        return entry_elements(entry)
    return markdown_elements(entry.get("markdown") or "", int(entry["page_number"]))


_LIST_MARKER = re.compile(r"^ {0,3}([-*+]|\d{1,9}[.)])[ \t]", re.MULTILINE)


def list_labels(markdown: str) -> list[str]:
    """Each item's marker in a list's Markdown, in order: its number ("150.", "151." …) or "" for a bullet."""
    return ["" if marker in "-*+" else marker for marker in _LIST_MARKER.findall(markdown)]


def plain_text(markdown: str) -> str:
    """The words of a block: tags and Markdown marks dropped, entities decoded, whitespace collapsed."""
    text = _TAG.sub(" ", markdown)
    text = _MD_MARKS.sub(lambda m: m.group(1) or "", text)
    return " ".join(html.unescape(text).split())


def pipe_table_html(lines: list[str]) -> str:
    """A pipe table (header, separator, rows) as HTML; cell text is escaped, the first row is the header."""
    def cells(line: str) -> list[str]:
        line = line.strip()
        line = line[1:] if line.startswith("|") else line
        line = line[:-1] if line.endswith("|") and not line.endswith("\\|") else line
        return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line)]

    head = "".join(f"<th>{html.escape(c)}</th>" for c in cells(lines[0]))
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells(line)) + "</tr>"
                   for line in lines[2:])
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _starts_block(lines: list[str], i: int) -> bool:
    line = lines[i]
    return bool(_FENCE.match(line) or _HEADING.match(line) or line.lstrip().startswith(("$$", "\\[", "<table"))
                or _LIST_ITEM.match(line)
                or (line.lstrip().startswith("|") and i + 1 < len(lines) and _PIPE_SEPARATOR.match(lines[i + 1])))


def _until(lines: list[str], start: int, closes: re.Pattern[str] | str, *, same_line_ok: bool) -> int:
    """Index just past the line that closes the block opened at `start` (or the end)."""
    def closed(text: str) -> bool:
        return bool(closes.search(text)) if isinstance(closes, re.Pattern) else closes in text

    opener_rest = lines[start]
    if same_line_ok and closed(opener_rest):
        return start + 1
    for j in range(start + 1, len(lines)):
        if closed(lines[j]):
            return j + 1
    return len(lines)


def _blocks(markdown: str) -> list[tuple[ElementType, list[str], dict[str, Any]]]:
    lines = markdown.replace("\r\n", "\n").split("\n")
    blocks: list[tuple[ElementType, list[str], dict[str, Any]]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if not stripped:
            i += 1
            continue
        if fence := _FENCE.match(line):
            marker = fence.group(1)
            end = next((j + 1 for j in range(i + 1, len(lines)) if lines[j].strip().startswith(marker)), len(lines))
            blocks.append((ElementType.CODE, lines[i:end], {"language": fence.group(2)}))
            i = end
            continue
        if heading := _HEADING.match(line):
            blocks.append((ElementType.HEADING, [line], {"level": len(heading.group(1)), "title": heading.group(2)}))
            i += 1
            continue
        if stripped.startswith("$$"):
            end = _until(lines, i, re.compile(r"\$\$\s*$"), same_line_ok=len(stripped) > 2 and stripped.endswith("$$"))
            blocks.append((ElementType.FORMULA, lines[i:end], {}))
            i = end
            continue
        if stripped.startswith("\\["):
            end = _until(lines, i, "\\]", same_line_ok=True)
            blocks.append((ElementType.FORMULA, lines[i:end], {}))
            i = end
            continue
        if stripped.lower().startswith("<table"):
            end = _until(lines, i, re.compile(r"</table>", re.IGNORECASE), same_line_ok=True)
            blocks.append((ElementType.TABLE, lines[i:end], {}))
            i = end
            continue
        if stripped.startswith("|") and i + 1 < len(lines) and _PIPE_SEPARATOR.match(lines[i + 1]):
            end = i + 2
            while end < len(lines) and lines[end].strip().startswith("|"):
                end += 1
            blocks.append((ElementType.TABLE, lines[i:end], {"pipe": True}))
            i = end
            continue
        if _LIST_ITEM.match(line):
            end = i + 1
            while end < len(lines) and lines[end].strip() and (
                    _LIST_ITEM.match(lines[end]) or lines[end].startswith((" ", "\t"))):
                end += 1
            blocks.append((ElementType.LIST, lines[i:end], {}))
            i = end
            continue
        end = i + 1
        while end < len(lines) and lines[end].strip() and not _starts_block(lines, end):
            end += 1
        chunk = lines[i:end]
        source = "\n".join(chunk)
        if _COMMENT.match(source):
            pass  # <!-- ... --> notes (a page marker, "formula-not-decoded") are not content
        elif _IMAGE.match(source):
            blocks.append((ElementType.FIGURE, chunk, {}))
        elif _WHOLE_INLINE_MATH.match(source):
            blocks.append((ElementType.FORMULA, chunk, {}))
        else:
            blocks.append((ElementType.PARAGRAPH, chunk, {}))
        i = end
    return blocks


def _formula_latex(source: str) -> str:
    body = source.strip()
    for left, right in (("$$", "$$"), ("\\[", "\\]"), ("$", "$")):
        if body.startswith(left) and body.endswith(right) and len(body) >= len(left) + len(right):
            return body[len(left):len(body) - len(right)].strip()
    return body


def _list_items(lines: list[str]) -> list[str]:
    items: list[str] = []
    for line in lines:
        if item := _LIST_ITEM.match(line):
            items.append(item.group(2).strip())
        elif items:
            items[-1] += " " + line.strip()
    return items


def markdown_elements(markdown: str, page: int) -> list[Element]:
    """The elements of a page's Markdown, in order, `bbox: null`."""
    elements: list[Element] = []
    for n, (kind, lines, info) in enumerate(_blocks(markdown), start=1):
        source = "\n".join(lines).strip("\n")
        fields: dict[str, Any] = {}
        text = plain_text(source)
        if kind is ElementType.HEADING:
            fields["level"] = info["level"]
            text = plain_text(info["title"])
        elif kind is ElementType.LIST:
            fields["items"] = _list_items(lines)
            text = " ".join(plain_text(item) for item in fields["items"])
        elif kind is ElementType.TABLE:
            fields["html"] = pipe_table_html([ln for ln in lines if ln.strip()]) if info.get("pipe") else source.strip()
        elif kind is ElementType.FORMULA:
            fields["latex"] = _formula_latex(source)
            text = fields["latex"]
        elif kind is ElementType.CODE:
            body = lines[1:-1] if len(lines) > 1 and _FENCE.match(lines[-1]) else lines[1:]
            text = "\n".join(body)
        elements.append(Element(id=element_id(page, n), type=kind, page=page, bbox=None, text=text,
                                markdown=source, **fields))
    return elements
