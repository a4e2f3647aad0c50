"""Inline Markdown (emphasis, code, links, inline `$…$` math) to sanitized HTML and to escaped LaTeX.

Math is cut out first (a placeholder of private-use characters stands in for it), so Markdown never eats
a backslash or an underscore of a formula; markdown-it renders the rest, the sanitizer allow-lists what
markdown-it wrote, and the formulas go back in rendered (HTML) or verbatim (LaTeX).
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
_PLACEHOLDER = re.compile("\ue000(\\d+)\ue001")
_PRIVATE = re.compile("[\ue000\ue001]")


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
        return f"\ue000{len(formulas) - 1}\ue001"

    return INLINE_MATH.sub(keep, _PRIVATE.sub("", text)), formulas


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
# Characters TeX cannot take at all (controls) are dropped.
_TEX_DROP = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ue000-\uf8ff\ufffe\uffff]")


def tex_escape(text: str) -> str:
    return _TEX_ESCAPE.sub(lambda m: _TEX_SPECIAL[m.group(0)], _TEX_DROP.sub("", text))


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
            out.append(script(tex_escape(content)))
        elif kind == "code_inline":
            out.append(r"\texttt{" + script(tex_escape(token.content)) + "}")
        elif kind in ("softbreak", "hardbreak"):
            out.append(" " if kind == "softbreak" else r"\\" + "\n")
        elif kind.endswith("_open") and kind[:-5] in _TEX_TAGS:
            out.append(_TEX_TAGS[kind[:-5]][0])
        elif kind.endswith("_close") and kind[:-6] in _TEX_TAGS:
            out.append(_TEX_TAGS[kind[:-6]][1])
        elif kind in ("link_open", "link_close"):
            pass  # a link keeps its text; no hyperref, whose XeTeX driver needs fonts TeX Live may lack
        elif kind == "image":
            out.append(script(tex_escape(token.content)))
    joined = "".join(out)
    return _PLACEHOLDER.sub(lambda m: str(math(formulas[int(m.group(1))])), joined)
