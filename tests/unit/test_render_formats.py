"""The renderers on small element trees: elements derived from Markdown, HTML that nothing from a document can
script, LaTeX that nothing from a document can run, spans in both."""

from __future__ import annotations

import re

import pytest

from services.core.elements import Element, ElementType, page_markdown
from services.results.render import typeset
from services.results.render.derive import RenderPage, document_pages, markdown_elements
from services.results.render.html import render_html
from services.results.render.latex import render_latex
from services.results.render.sanitize import parse_table, safe_href, sanitize_inline

PAGE = """# Annual report

Intro with **bold**, `code` and $x^{2}$ inline.

- first item
- second item
  continued

| a | b |
|---|---|
| 1 | 2 |

<table><tr><th rowspan="2">k</th><th colspan="2">v</th></tr><tr><td>x</td><td>y</td></tr></table>

$$
\\frac{a}{b}
$$

```python
print("hi")
```

![a chart](chart.png)

Closing words."""


def test_markdown_blocks_become_typed_elements_and_render_back() -> None:
    elements = markdown_elements(PAGE, 3)
    assert [e.type for e in elements] == [
        ElementType.HEADING, ElementType.PARAGRAPH, ElementType.LIST, ElementType.TABLE, ElementType.TABLE,
        ElementType.FORMULA, ElementType.CODE, ElementType.FIGURE, ElementType.PARAGRAPH]
    assert [e.id for e in elements][:2] == ["p3-e1", "p3-e2"] and all(e.bbox is None and e.page == 3
                                                                      for e in elements)
    assert elements[0].level == 1 and elements[0].text == "Annual report"
    assert elements[2].items == ["first item", "second item continued"]
    assert elements[3].html == "<table><thead><tr><th>a</th><th>b</th></tr></thead><tbody><tr><td>1</td>" \
                               "<td>2</td></tr></tbody></table>"
    assert elements[5].latex == "\\frac{a}{b}" and elements[6].text == 'print("hi")'
    assert page_markdown(elements) == PAGE  # the elements are the page's Markdown, block by block


def test_engine_elements_are_used_as_given() -> None:
    given = [{"id": "p1-e1", "type": "paragraph", "page": 1, "bbox": [1, 2, 3, 4], "text": "t", "markdown": "t"}]
    (page,) = document_pages([{"page_number": 1, "status": "succeeded", "markdown": "ignored", "elements": given,
                               "width": 612.0, "height": 792.0}])
    assert page.elements[0].bbox == (1, 2, 3, 4) and page.width == 612.0


@pytest.mark.parametrize("url", ["javascript:alert(1)", "JaVaScRiPt:alert(1)", "java\tscript:alert(1)",
                                 "&#106;avascript:alert(1)", "data:text/html,<script>alert(1)</script>",
                                 "vbscript:x", "file:///etc/passwd", " javascript:alert(1)"])
def test_unsafe_link_schemes_are_refused(url: str) -> None:
    assert safe_href(url) is None
    assert "href" not in sanitize_inline(f'<a href="{url}">x</a>')


def test_sanitizer_keeps_spans_and_text_and_drops_everything_active() -> None:
    dirty = ('<table onclick="x()"><tr><td rowspan="2" colspan="abc" style="color:red" onmouseover="y()">a'
             '<script>alert(1)</script><img src=x onerror=alert(2)><b>bold</b></td><th colspan=3>h</th></tr>'
             '<tr><td><iframe src="https://evil"></iframe>c &lt;d&gt;</td></tr></table>')
    table = parse_table(dirty)
    html = table.to_html()
    assert html == ('<table><tbody><tr><td rowspan="2">a<b>bold</b></td><th colspan="3">h</th></tr>'
                    '<tr><td>c &lt;d&gt;</td></tr></tbody></table>')
    assert sanitize_inline('<a href="https://x.org/?a=1&b=2" onclick="z">ok</a><style>*{}</style>') == \
        '<a href="https://x.org/?a=1&amp;b=2" rel="noopener noreferrer nofollow">ok</a>'


def test_html_escapes_text_blocks_links_and_scripts() -> None:
    hostile = markdown_elements(
        "# <script>alert(1)</script> title\n\n"
        "&lt;script>alert(2)&lt;/script> as the cpu engine escapes it, <script>alert(3)</script> as a model "
        "might write it, [click](javascript:alert(4)) and [fine](https://example.org) and "
        "<img src=x onerror=alert(5)> and \ue002deadbeef0000:0\ue003\n\n"
        '<table><tr><td><a href="javascript:alert(6)">cell</a></td></tr></table>', 1)
    html = render_html([RenderPage(number=1, status="succeeded", elements=hostile)], title="<b>t</b>")
    assert "<script" not in html.lower() and "onerror" not in html and "<img" not in html
    assert not re.search(r"href=\S*javascript", html, re.IGNORECASE)
    assert "[click](javascript:alert(4))" in html  # a refused link stays visible as text, not a link
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in html  # text stays text
    assert '<a href="https://example.org" rel="noopener noreferrer nofollow">fine</a>' in html
    assert "<title>&lt;b&gt;t&lt;/b&gt;</title>" in html
    assert "script-src" not in html and "default-src 'none'" in html  # a CSP that allows no script at all
    pytest.importorskip("html5lib").HTMLParser(strict=True).parse(html)  # hostile input, still well-formed HTML5
    tags = re.findall(r"<(h[1-6]|p|table|ul|ol|pre|div|figure|aside|header|footer)\b([^>]*)>", html)
    assert all("data-bbox=" in attrs for tag, attrs in tags if "page-label" not in attrs)


def test_html_sections_pages_and_keeps_spans() -> None:
    pages = document_pages([
        {"page_number": 1, "status": "succeeded", "markdown": PAGE},
        {"page_number": 2, "status": "failed", "error": {"code": "page_too_large", "message": "<huge>"}}])
    html = render_html(pages)
    assert html.startswith("<!DOCTYPE html>") and html.count("<section ") == 2
    html5lib = pytest.importorskip("html5lib")
    html5lib.HTMLParser(strict=True).parse(html)  # no WHATWG parse error
    assert '<section class="page failed" data-page="2">' in html and "&lt;huge&gt;" in html
    assert '<th rowspan="2">k</th><th colspan="2">v</th>' in html
    if typeset.available():
        assert 'class="katex' in html and "@font-face" in html and "data:font/woff2;base64," in html
    else:
        assert '<code class="math-source">x^{2}</code>' in html


def test_latex_escapes_text_and_refuses_formulas_that_run_tex() -> None:
    elements = markdown_elements(
        "## Costs & #1 at 50% of $5 for a_b {c} ~d^e \\f\n\n"
        "$$\n\\input{/etc/passwd}\n$$\n\n$$\n\\immediate\\write18{rm -rf /}\n$$\n\n$$\nx^2 + y_1\n$$\n\n"
        "```\n\\end{verbatim} \\input{x}\n```\n\nمرحبا بالعالم 2026 hello 你好", 1)
    tex = render_latex([RenderPage(number=1, status="succeeded", elements=elements)])
    assert "\\subsection*{Costs \\& \\#1 at 50\\% of \\$5 for a\\_b \\{c\\} \\textasciitilde{}d" \
           "\\textasciicircum{}e \\textbackslash{}f}" in tex
    assert "\\input{" not in tex.replace("\\textbackslash{}input\\{", "") and "\\write18" not in tex
    assert "\\[\nx^2 + y_1\n\\]" in tex
    assert "{\\pmarabic\\pmrtl{مرحبا بالعالم}} 2026 hello {\\pmcjk 你好}" in tex
    assert "\\IfFontExistsTF{Noto Naskh Arabic}{\\newfontfamily\\pmarabic{Noto Naskh Arabic}}{" in tex
    assert "\\defaultfontfeatures[Noto Naskh Arabic]{Script=Arabic}" in tex.split("\\else")[0]  # LuaTeX's
    assert "\\IfFontExistsTF{Noto Serif CJK SC}{\\newfontfamily\\pmcjk{Noto Serif CJK SC}}{" in tex


def _inline_formula(latex: str) -> str:
    """How the LaTeX shows an inline formula: as math where KaTeX parses it, else as its source."""
    escaped = latex.replace("^", "\\textasciicircum{}")
    return f"${latex}$" if typeset.available() else f"\\texttt{{\\${escaped}\\$}}"


def test_latex_keeps_inline_formulas_in_every_kind_of_text() -> None:
    """Each `$…$` used to come out as its placeholder's number: "Einstein wrote 0"."""
    elements = markdown_elements(
        "## On $E=mc^2$\n\nEinstein wrote $E=mc^2$ in `$E=mc^2$`.\n\n- with $E=mc^2$\n- two", 1)
    elements += [Element(id="p1-e9", type=kind, page=1, bbox=None, text="Figure 1: E=mc^2",
                         markdown="Figure 1: $E=mc^2$") for kind in (ElementType.CAPTION, ElementType.FOOTNOTE)]
    tex = render_latex([RenderPage(number=1, status="succeeded", elements=elements)]).split("\\begin{document}")[1]
    formula = _inline_formula("E=mc^2")
    assert f"\\subsection*{{On {formula}}}" in tex
    assert f"Einstein wrote {formula} in \\texttt{{{formula}}}." in tex
    assert f"\\item{{}} with {formula}\n" in tex
    assert f"{{\\small\\itshape Figure 1: {formula}\\par}}" in tex
    assert f"{{\\footnotesize Figure 1: {formula}\\par}}" in tex


def test_private_use_characters_are_dropped_and_cannot_pose_as_a_formula() -> None:
    """A document's private-use characters (raw or as character references) and noncharacters never stand in for
    a formula — in LaTeX, which drops them, and in HTML, which keeps private-use text as it is."""
    markdown = ("Icons \ue000\uf8ff, forged \ue0000\ue001 and &#xE000;0&#xE001; and <span>&#xE000;0&#xE001;</span>"
                " and \ufdd00\ufdd1 and &#xFDD0;0&#xFDD1; and <span>&#xFDD0;0&#xFDD1;</span>, real $E=mc^2$.")
    page = RenderPage(number=1, status="succeeded", elements=markdown_elements(markdown, 1))
    tex = render_latex([page]).split("\\begin{document}")[1]
    assert tex.count(_inline_formula("E=mc^2")) == 1 and "real " + _inline_formula("E=mc^2") + "." in tex
    assert not re.search("[\ue000-\uf8ff\ufdd0-\ufdef]", tex)
    assert "Icons , forged 0 and 0 and 0 and 0 and" in tex
    html = render_html([page], title="t")
    assert html.count("E=mc^2") == 1  # the formula, once: as KaTeX's annotation or as its source


def test_a_list_item_that_opens_with_a_bracket_keeps_it() -> None:
    """`\\item [x] done` made "x" the bullet; `\\item [unbalanced` did not compile."""
    elements = markdown_elements("- [unbalanced\n- [x] done\n- plain", 1)
    tex = render_latex([RenderPage(number=1, status="succeeded", elements=elements)])
    assert "\\begin{itemize}\n\\item{} [unbalanced\n\\item{} [x] done\n\\item{} plain\n\\end{itemize}" in tex


def test_latex_tables_get_multirow_and_multicolumn() -> None:
    elements = markdown_elements('<table><tr><th rowspan="2">k</th><th colspan="2">v</th></tr>'
                                 "<tr><td>x</td><td>y</td></tr><tr><td>1</td><td>2</td><td>3</td></tr></table>", 1)
    tex = render_latex([RenderPage(number=1, status="succeeded", elements=elements)])
    rows = tex.split("\\begin{longtable}")[1].split("\\end{longtable}")[0]
    assert "{|*{3}" in rows
    assert "\\multirow{2}{=}{\\textbf{k}} & \\multicolumn{2}{" in rows and "{\\textbf{v}}" in rows
    assert "\\\\ \\cline{2-3}" in rows  # no rule under the cell that spans on
    assert " & x & y \\\\ \\hline" in rows and "1 & 2 & 3 \\\\ \\hline" in rows
    # the header cell spanning into row 2 makes both rows the header, repeated on every page
    assert rows.index("\\endhead") > rows.index(" & x & y") and rows.count("\\endhead") == 1


def test_formulas_without_katex_fall_back_to_source() -> None:
    element = Element(id="p1-e1", type=ElementType.FORMULA, page=1, bbox=None, text="\\frac{", latex="\\frac{")
    tex = render_latex([RenderPage(number=1, status="succeeded", elements=[element])])
    assert "\\[" not in tex.split("\\begin{document}")[1]  # unparsable: printed as text, the document compiles


def test_an_ordered_list_keeps_the_documents_own_numbers() -> None:
    """Exercises 150. to 151. stay 150. and 151. in HTML and LaTeX (a list renumbered from 1 loses them)."""
    from services.core.elements import Element, ElementType
    from services.results.render.derive import RenderPage
    from services.results.render.html import render_html
    from services.results.render.latex import render_latex

    element = Element(id="p1-e1", type=ElementType.LIST, page=1, bbox=None, text="first second",
                      markdown="150. first\n\n151. second", items=["first", "second"], ordered=True)
    page = RenderPage(number=1, status="succeeded", elements=[element])
    assert "\\item[{150.}]{} first" in render_latex([page], title="t")
    assert re.findall(r"<li[^>]*>", render_html([page], title="t")) == ['<li value="150">', '<li value="151">']


def test_numbers_among_bullets_keep_their_labels() -> None:
    from services.core.elements import Element, ElementType
    from services.results.render.derive import RenderPage
    from services.results.render.html import render_html
    from services.results.render.latex import render_latex

    element = Element(id="p1-e1", type=ElementType.LIST, page=1, bbox=None, text="",
                      markdown="- a. Find it.\n\n150. first\n\n151. second", items=["a. Find it.", "first", "second"])
    page = RenderPage(number=1, status="succeeded", elements=[element])
    latex = render_latex([page], title="t")
    assert "\\item{} a. Find it." in latex and "\\item[{150.}]{} first" in latex and "\\item[{151.}]{} second" in latex
    assert "<li>150. first</li>" in render_html([page], title="t")
