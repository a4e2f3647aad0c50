"""Blocks to Markdown: paragraphs re-joined across line breaks, hyphenation undone, links made safe."""

from __future__ import annotations

import re
from urllib.parse import quote

from services.worker.engines.cpu.mathtext import operator_latex, sized_delimiters
from services.worker.engines.cpu.model import Block, BlockKind, Line, Word

_SAFE_SCHEMES = ("http://", "https://", "mailto:", "ftp://")
# Characters a URL may keep as they are; everything else (spaces, newlines, brackets, quotes, angle brackets,
# backslashes, backticks) is percent-encoded so a target cannot close the link and start new Markdown.
_URL_SAFE = "/?:@&=+$,;-_.!~*#%'"
_HTML_START = re.compile(r"<(?=[A-Za-z/!?])")
_LEADING_MARKUP = re.compile(r"^(\s*)([#>=+]|\d+[.)](?=\s)|[-*](?=\s))")
_HYPHENS = "-\u00ad\u2010\u2011"
# A variable or a call beside a formula: "u", "c(g,", "S)" (set in the text font, so no math word of its own).
_VARIABLE = re.compile(r"[A-Za-z]|[A-Za-z]?[(\[][A-Za-z][)\],]{0,2}|[A-Za-z][)\],]{1,2}|\d+[A-Za-z]?[.,;:]?")


def escape_url(url: str) -> str | None:
    """A link target that stays one Markdown token, or None for schemes a reader should not follow."""
    url = url.strip()
    if not url.lower().startswith(_SAFE_SCHEMES):
        return None
    # Percent signs not starting a valid escape are themselves escaped.
    url = re.sub(r"%(?![0-9A-Fa-f]{2})", "%25", url)
    return quote(url, safe=_URL_SAFE).replace("'", "%27")


def escape_text(text: str) -> str:
    """Text that cannot open an HTML tag or a link by accident."""
    return _HTML_START.sub("&lt;", text).replace("](", "]\\(")


def join_lines(lines: list[str]) -> str:
    """One paragraph from its lines: a word split by a hyphen at a line end is joined again."""
    out = ""
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        if not out:
            out = line
            continue
        if out[-1] in _HYPHENS and len(out) > 1 and out[-2].isalpha() and line[:1].islower() or out[-1] == "\u00ad":
            out = out[:-1] + line
        else:
            out = f"{out} {line}"
    # TeX-style quotes set as two single quotes read as the double quotes they stand for.
    return out.replace("\u00ad", "").replace("\u2018\u2018", "\u201c").replace("\u2019\u2019", "\u201d")


def line_markdown(line: Line) -> str:
    """A line's words, with link runs rendered as Markdown links with escaped targets and runs of math words as
    inline `$...$` LaTeX."""
    parts: list[str] = []
    index = 0
    words = line.words
    islands = dict(math_islands(words))
    while index < len(words):
        word = words[index]
        if index in islands:
            end = islands[index]
            parts.append(_math(words[index:end]))
            index = end
        elif word.link:
            end = index
            while end < len(words) and words[end].link == word.link:
                end += 1
            parts.append(_link([w for w in words[index:end]]))
            index = end
        else:
            parts.append(escape_text(word.text))
            index += 1
    return " ".join(parts)


def math_islands(words: list[Word]) -> list[tuple[int, int]]:
    """[start, end) runs of words that read as one formula: math words, with operators ("=", "∈") and single
    italic letters (variables set in the text font) between or beside them."""
    kinds: list[str] = []
    for word in words:
        if word.link:
            kinds.append("")  # a link keeps its words
        elif word.math:
            kinds.append("math")
        elif operator_latex(word.text):
            kinds.append("op")
        elif _VARIABLE.fullmatch(word.text) and (word.italic or not word.text.isalpha()):
            kinds.append("var")
        else:
            kinds.append("")
    islands: list[tuple[int, int]] = []
    index = 0
    while index < len(words):
        if not kinds[index]:
            index += 1
            continue
        end = index
        # A formula ends at a sentence mark its last math word carries ("λg." ends it, "x1," does not).
        while end < len(words) and kinds[end] and (end == index or _tail(words[end - 1]) in ("", ",")):
            end += 1
        start, stop = index, end
        # A formula does not open with an operator or a number ("150. s(t) = ..." is an item number).
        while start < stop and (kinds[start] == "op" or kinds[start] == "var" and words[start].text[:1].isdigit()):
            start += 1
        while stop > start and kinds[stop - 1] == "op":
            stop -= 1
        if "math" in kinds[start:stop]:
            islands.append((start, stop))
        index = end
    return islands


def _tail(word: Word) -> str:
    return word.math[1] if word.math else ""


def _math(words: list[Word]) -> str:
    parts: list[str] = []
    tail = ""
    for position, word in enumerate(words):
        last = position == len(words) - 1
        if word.math:
            parts.append(word.math[0] + ("" if last else word.math[1]))
            tail = word.math[1] if last else ""
        elif last and word.text[-1] in ".,;:" and len(word.text) > 1:
            parts.append(word.text[:-1])
            tail = word.text[-1]
        else:
            parts.append(operator_latex(word.text) or word.text)
    # "](" could close a Markdown link for a renderer that does not know math; a space changes nothing in LaTeX.
    latex = sized_delimiters(" ".join(parts)).replace("](", "] (")
    return f"${latex}${tail}"


def _link(words: list[Word]) -> str:
    text = " ".join(w.text for w in words)
    target = escape_url(words[0].link)
    if target is None:
        return escape_text(text)
    label = text.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")
    return f"[{label}]({target})"


def block_markdown(block: Block) -> str:
    if block.kind == BlockKind.TABLE:
        return block.html
    if block.kind == BlockKind.CODE:
        body = "\n".join(" ".join(w.text for w in line.words) for line in block.lines)
        return f"```\n{body.replace('```', '` ` `')}\n```"
    text = join_lines([line_markdown(line) for line in block.lines])
    if block.kind == BlockKind.HEADING:
        return f"{'#' * max(1, min(6, block.level))} {text}"
    if block.kind == BlockKind.LIST_ITEM:
        return _list_item(text)
    return _LEADING_MARKUP.sub(lambda m: m.group(1) + "\\" + m.group(2), text, count=1)


def _list_item(text: str) -> str:
    marker, _, rest = text.partition(" ")
    if re.fullmatch(r"\(?\d{1,3}[.)]", marker):
        number = re.sub(r"\D", "", marker)
        return f"{number}. {rest}"
    if re.fullmatch(r"\(?[a-zA-Z]{1,4}[.)]", marker):
        return f"- {marker} {rest}"
    return f"- {rest}"


def render(blocks: list[Block]) -> str:
    parts = [block_markdown(b) for b in blocks if b.kind != BlockKind.FURNITURE]
    text = "\n\n".join(p for p in parts if p.strip())
    return text.strip() + "\n" if text.strip() else ""
