"""Inline Markdown (emphasis, code, links, inline `$…$` math) to sanitized HTML and to escaped LaTeX.

Math is cut out first (a placeholder stands in for it), so Markdown never eats a backslash or an underscore of
a formula; markdown-it renders the rest, the sanitizer allow-lists what markdown-it wrote, and the formulas go
back in rendered (HTML) or verbatim (LaTeX).

A placeholder is `U+FDD0 index U+FDD1`: noncharacters, which are never text. They are taken out of the
document before the formulas are cut out, and neither markdown-it nor the sanitizer decodes a character
reference into one (`&#xFDD0;` becomes U+FFFD or nothing), so a document cannot forge a placeholder — not even
with the private-use characters that LaTeX drops from its text.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from markdown_it import MarkdownIt

from services.results.render.sanitize import safe_href, sanitize_inline

# Pandoc's rule: `$` opens when a non-space follows, closes when a non-space precedes and no digit follows
# ("$5 and $6" is money, not math).
INLINE_MATH = re.compile(r"(?<![\\$])\$(?![\s$])((?:\\.|[^$\\\n])+?)(?<![\s\\])\$(?!\d)|\\\((.+?)\\\)")
_OPEN, _CLOSE = "\ufdd0", "\ufdd1"
_PLACEHOLDER = re.compile(f"{_OPEN}(\\d+){_CLOSE}")
_NONCHARACTERS = re.compile("[\ufdd0-\ufdef]")


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": True, "linkify": False, "typographer": False})
    md.enable("strikethrough")
    md.validateLink = lambda url: safe_href(url) is not None  # type: ignore[method-assign]
    return md


def split_math(text: str) -> tuple[str, list[str]]:
    """`text` with each inline formula replaced by a placeholder, and the formulas' LaTeX in order."""
    formulas: list[str] = []

    def keep(match: re.Match[str]) -> str:
        formulas.append((match.group(1) or match.group(2) or "").strip())
        return f"{_OPEN}{len(formulas) - 1}{_CLOSE}"

    return INLINE_MATH.sub(keep, _NONCHARACTERS.sub("", text)), formulas


def inline_html(markdown: str, math: Any) -> str:
    """Sanitized HTML of inline Markdown; `math(latex, display)` gives a formula's HTML."""
    text, formulas = split_math(markdown)
    rendered = _markdown().renderInline(text)
    safe = sanitize_inline(rendered)
    return _PLACEHOLDER.sub(lambda m: str(math(formulas[int(m.group(1))], False)), safe)


# --- LaTeX ---------------------------------------------------------------------------------------------------

_TEX_SPECIAL = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&", "#": r"\#",
                "^": r"\textasciicircum{}", "_": r"\_", "~": r"\textasciitilde{}", "%": r"\%",
                "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}", "\u00a0": "~"}
_TEX_ESCAPE = re.compile("|".join(re.escape(k) for k in _TEX_SPECIAL))
# Characters TeX cannot take at all (controls), private-use characters (no font has them: a PDF's private glyph
# codes) and noncharacters are dropped.
_TEX_DROP = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ue000-\uf8ff\ufdd0-\ufdef\ufffe\uffff]")


def tex_escape(text: str) -> str:
    return _TEX_ESCAPE.sub(lambda m: _TEX_SPECIAL[m.group(0)], _TEX_DROP.sub("", text))


def _tex_with_math(text: str, formulas: list[str], math: Any, script: Any) -> str:
    """`text` escaped (in its scripts' fonts) around its placeholders, each placeholder its formula's LaTeX.
    The formulas never pass through `tex_escape`, which drops the placeholders' noncharacters."""
    out: list[str] = []
    for n, part in enumerate(_PLACEHOLDER.split(text)):  # text, index, text, index, …, text
        if n % 2:
            out.append(str(math(formulas[int(part)])))
        elif part:
            out.append(script(tex_escape(part)))
    return "".join(out)


_TEX_TAGS = {"strong": (r"\textbf{", "}"), "em": (r"\emph{", "}"), "s": (r"\sout{", "}"),
             "code_inline": (r"\texttt{", "}")}


def inline_latex(markdown: str, math: Any, script: Any) -> str:
    """Escaped LaTeX of inline Markdown. `math(latex)` gives a formula's LaTeX (or an escaped fallback),
    `script(escaped)` wraps runs of non-Latin scripts in their font."""
    text, formulas = split_math(markdown)
    tokens = _markdown().parseInline(text)
    out: list[str] = []
    for token in tokens[0].children or [] if tokens else []:
        kind = token.type
        if kind in {"text", "html_inline"}:
            content = token.content if kind == "text" else re.sub(r"<[^>]+>", "", token.content)
            out.append(_tex_with_math(content, formulas, math, script))
        elif kind == "code_inline":
            out.append(r"\texttt{" + _tex_with_math(token.content, formulas, math, script) + "}")
        elif kind in ("softbreak", "hardbreak"):
            out.append(" " if kind == "softbreak" else r"\\" + "\n")
        elif kind.endswith("_open") and kind[:-5] in _TEX_TAGS:
            out.append(_TEX_TAGS[kind[:-5]][0])
        elif kind.endswith("_close") and kind[:-6] in _TEX_TAGS:
            out.append(_TEX_TAGS[kind[:-6]][1])
        elif kind in ("link_open", "link_close"):
            pass  # a link keeps its text; no hyperref, whose XeTeX driver needs fonts TeX Live may lack
        elif kind == "image":
            out.append(_tex_with_math(token.content, formulas, math, script))
    return "".join(out)
