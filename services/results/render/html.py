"""`document.html`: one standalone HTML5 file — a `<section data-page>` per page, an element per block with its
`data-bbox`, real tables, formulas typeset by KaTeX — that nothing taken from a document can script.

Every string from the document goes through `html.escape` or the allow-list sanitizer, and the page carries
a Content-Security-Policy with no script source at all, so even a sanitizer bug could not run script.
"""

from __future__ import annotations

import base64
import html
import json
import re
import secrets

from services.core.elements import DERIVED_NOTE, Element, ElementType
from services.core.pages import PageErrorEntry
from services.core.storage import RESULT_HTML_CSP
from services.results.render import typeset
from services.results.render.derive import RenderPage, list_labels
from services.results.render.inline import INLINE_MATH, inline_html
from services.results.render.sanitize import parse_table

CSP = RESULT_HTML_CSP
STYLE = """
body{font-family:"Noto Serif",Georgia,serif;max-width:60rem;margin:2rem auto;padding:0 1rem;line-height:1.5}
section.page{border-top:1px solid #ccc;padding-top:1rem;margin-top:2rem}
section.page>.page-label{font:0.75rem sans-serif;color:#777;margin:0 0 1rem}
section.page.failed{color:#a00}
table{border-collapse:collapse;margin:1rem 0;font-size:0.9rem}
th,td{border:1px solid #999;padding:0.2rem 0.4rem;vertical-align:top}
th{background:#f2f2f2}
pre{background:#f6f6f6;padding:0.6rem;overflow-x:auto}
.page-header,.page-footer{font-size:0.8rem;color:#777}
.footnote,.caption{font-size:0.9rem}
.figure-placeholder{border:1px dashed #aaa;padding:1rem;color:#666;text-align:center}
figure>img{max-width:100%;height:auto}
.form-field input[type=text]{min-width:12rem}
.math-source{color:#555}
p,h1,h2,h3,h4,h5,h6,li,td,th,aside,header,footer{unicode-bidi:plaintext;text-align:start}
"""
_FENCE_LANGUAGE = re.compile(r"^[ \t]*(?:`{3,}|~{3,})[ \t]*([\w+#.-]+)")


class _Figures:
    """The figures' images by path, inlined as `data:` URLs in reading order while `budget` bytes last."""

    def __init__(self, images: dict[str, bytes], budget: int) -> None:
        self.images, self.left = images, budget

    def data_url(self, path: str) -> str | None:
        data = self.images.get(path)
        if data is None or len(data) > self.left:
            return None
        self.left -= len(data)
        media = "image/jpeg" if path.endswith(".jpg") else "image/png"
        return f"data:{media};base64,{base64.b64encode(data).decode()}"


class _Math:
    """Formulas collected while the document is written, typeset in one KaTeX call, then put in place."""

    def __init__(self) -> None:
        self.formulas: list[tuple[str, bool]] = []
        self.nonce = secrets.token_hex(6)  # a document cannot guess it, so its text cannot fake a formula

    def __call__(self, latex: str, display: bool) -> str:
        self.formulas.append((latex, display))
        return f"\ue002{self.nonce}:{len(self.formulas) - 1}\ue003"

    def fill(self, body: str) -> tuple[str, int]:
        rendered = typeset.render_all(self.formulas)
        unrendered = 0

        def put(match: re.Match[str]) -> str:
            nonlocal unrendered
            index = int(match.group(1))
            latex, display = self.formulas[index]
            if rendered[index] is not None:
                return str(rendered[index])
            unrendered += 1
            tag = "pre" if display else "code"
            return f'<{tag} class="math-source">{html.escape(latex)}</{tag}>'

        return re.sub(f"\ue002{self.nonce}:(\\d+)\ue003", put, body), unrendered


def _attrs(element: Element, css: str | None = None) -> str:
    bbox = json.dumps(list(element.bbox)) if element.bbox is not None else "null"
    classes = f' class="{css}"' if css else ""
    return (f' id="{html.escape(element.id, quote=True)}" data-type="{element.type.value}"'
            f' data-bbox="{html.escape(bbox, quote=True)}"{classes}')


def _math_text(math: _Math) -> object:
    def hook(text: str) -> str:
        out, last = [], 0
        for match in INLINE_MATH.finditer(text):
            out.append(html.escape(text[last:match.start()]))
            out.append(math((match.group(1) or match.group(2) or "").strip(), False))
            last = match.end()
        out.append(html.escape(text[last:]))
        return "".join(out)
    return hook


def _figure_html(element: Element, figures: _Figures | None) -> str:
    label = f"{element.chart} chart" if element.chart else element.text or "figure"
    if element.image and figures is not None and (url := figures.data_url(element.image)):
        alt = html.escape(element.markdown[2:element.markdown.find("](")] if element.markdown.startswith("![")
                          else label, quote=True)
        inner = f'<img src="{url}" alt="{alt}">'
    elif element.image:  # kept, but over the inline budget: named, fetched beside the document
        inner = f'<div class="figure-placeholder">[{html.escape(label)}: {html.escape(element.image)}]</div>'
    else:
        inner = f'<div class="figure-placeholder">[{html.escape(label)}]</div>'
    return f"<figure{_attrs(element)}>{inner}{_derived_table(element)}</figure>"


def _derived_table(element: Element) -> str:
    """A chart's data table under its image, with the note that it was read from the drawing."""
    table = parse_table(element.html) if element.html and element.derived else None
    if table is None or not table.rows:
        return ""
    body = re.sub(r"^<table>", '<table class="derived" data-derived="true">', table.to_html())
    return f'<figcaption class="derived-note">{html.escape(DERIVED_NOTE.strip("*"))}</figcaption>{body}'


def _page_breaks(table_html: str, element: Element) -> str:
    """A table merged across pages: `data-page` on the first row of each later part (its rows are its <tr>s)."""
    if not element.parts or len(element.parts) < 2:
        return table_html
    pieces = table_html.split("<tr>")
    if len(pieces) - 1 != element.parts[-1].rows[1]:
        return table_html
    starts = {part.rows[0]: part.page for part in element.parts[1:]}
    return pieces[0] + "".join((f'<tr data-page="{starts[i]}">' if i in starts else "<tr>") + piece
                               for i, piece in enumerate(pieces[1:]))


def _field_html(element: Element) -> str:
    """A form field or a printed checkbox as a disabled control: shown, never sent (the CSP forbids it too)."""
    markdown = element.markdown or element.text
    if element.checked is not None:  # a checkbox or radio button: its label is its Markdown after the box
        label = re.sub(r"^\[[ xX]\]\s*", "", markdown)
        mark = " checked" if element.checked else ""
        kind = "radio" if element.field_type == "radio" else "checkbox"
        return (f'<p{_attrs(element, "form-field")}><label><input type="{kind}" disabled{mark}> '
                f"{html.escape(label)}</label></p>")
    label, _, _ = markdown.partition(": ")
    value = html.escape(element.value or "", quote=True)
    return (f'<p{_attrs(element, "form-field")}><label>{html.escape(label)} '
            f'<input type="text" value="{value}" disabled></label></p>')


def element_html(element: Element, math: _Math, figures: _Figures | None = None) -> str:
    kind = element.type
    if kind in (ElementType.TITLE, ElementType.HEADING):
        level = 1 if kind is ElementType.TITLE else max(1, min(6, element.level or 2))
        source = re.sub(r"^\s*#{1,6}\s+", "", element.markdown) if element.markdown else element.text
        return f"<h{level}{_attrs(element)}>{inline_html(source.strip() or element.text, math)}</h{level}>"
    if kind is ElementType.LIST:
        items = element.items or [element.text]
        ordered = bool(re.match(r"^\s*\d", element.markdown))
        tag = "ol" if ordered else "ul"
        # A list keeps the document's own numbers (exercise 150. to 159., not 1. to 10.): an ordered list as
        # <li value>, numbers among bullets as the item's own label.
        labels = list_labels(element.markdown)
        if len(labels) != len(items):
            labels = [""] * len(items)
        if ordered and all(labels):
            lis = [f'<li value="{int(label[:-1])}">{inline_html(item, math)}</li>'
                   for label, item in zip(labels, items, strict=True)]
        else:
            tag = "ul" if any(labels) else tag
            lis = [f'<li>{html.escape(label) + " " if label else ""}{inline_html(item, math)}</li>'
                   for label, item in zip(labels, items, strict=True)]
        return f"<{tag}{_attrs(element)}>" + "".join(lis) + f"</{tag}>"
    if kind is ElementType.TABLE:
        table = parse_table(element.html or element.markdown, on_text=_math_text(math))  # type: ignore[arg-type]
        return re.sub(r"^<table>", f"<table{_attrs(element)}>", _page_breaks(table.to_html(), element))
    if kind is ElementType.FORMULA:
        return f"<div{_attrs(element, 'formula')}>{math(element.latex or element.text, True)}</div>"
    if kind is ElementType.CODE:
        language = _FENCE_LANGUAGE.match(element.markdown or "")
        lang = f' class="language-{html.escape(language.group(1), quote=True)}"' if language else ""
        return f"<pre{_attrs(element)}><code{lang}>{html.escape(element.text)}</code></pre>"
    if kind is ElementType.FIGURE:
        return _figure_html(element, figures)
    if kind in (ElementType.FORM_FIELD, ElementType.CHECKBOX):
        return _field_html(element)
    if kind in (ElementType.PAGE_HEADER, ElementType.PAGE_FOOTER):
        tag = "header" if kind is ElementType.PAGE_HEADER else "footer"
        return f"<{tag}{_attrs(element, kind.value.replace('_', '-'))}>{inline_html(element.text, math)}</{tag}>"
    css = {ElementType.CAPTION: "caption", ElementType.FOOTNOTE: "footnote"}.get(kind)
    tag = "aside" if kind is ElementType.FOOTNOTE else "p"
    return f"<{tag}{_attrs(element, css)}>{inline_html(element.markdown or element.text, math)}</{tag}>"


def _page_html(page: RenderPage, math: _Math, figures: _Figures) -> str:
    size = ""
    if page.width and page.height:
        size = f' data-width="{page.width:g}" data-height="{page.height:g}"'
    label = f'<p class="page-label">page {page.number}</p>'
    if page.status != "succeeded":
        error: PageErrorEntry = page.error or {"code": "unknown", "message": ""}
        note = html.escape(f"{page.status}: {error.get('code', 'unknown')} {error.get('message', '')}".strip())
        return (f'<section class="page failed" data-page="{page.number}"{size}>{label}<p>{note}</p></section>')
    body = "\n".join(element_html(e, math, figures) for e in page.elements)
    return f'<section class="page" data-page="{page.number}"{size}>{label}\n{body}\n</section>'


def render_html(pages: list[RenderPage], *, title: str = "document", lang: str = "",
                figures: dict[str, bytes] | None = None, inline_budget: int = 8 * 1024 * 1024) -> str:
    """`figures`: the figures' images by path; inlined up to `inline_budget` bytes, in reading order."""
    math = _Math()
    kept = _Figures(figures or {}, inline_budget)
    body = "\n".join(_page_html(page, math, kept) for page in pages)
    body, unrendered = math.fill(body)
    css = typeset.inline_css(body)
    lang_attr = f' lang="{html.escape(lang, quote=True)}"' if lang else ""
    return (f'<!DOCTYPE html>\n<html{lang_attr}>\n<head>\n<meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f'<meta name="generator" content="pagemill">\n<title>{html.escape(title)}</title>\n'
            f"<style>{STYLE}</style>\n" + (f"<style>{css}</style>\n" if css else "")
            + f"</head>\n<body>\n<main>\n{body}\n</main>\n</body>\n</html>\n")
