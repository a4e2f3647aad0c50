"""`document.tex`: a XeLaTeX and LuaLaTeX document of the element tree — text escaped, headings as sections,
tables as `longtable` with `\\multicolumn`/`\\multirow`, formulas kept, non-Latin scripts in Noto fonts.

Scripts: the main font is Noto Serif (Latin, Greek, Cyrillic); every other script this module knows (CJK
too, with line breaking between ideographs) is wrapped, run by run, in its Noto font, and right-to-left runs in
`\\pmrtl`. No ucharclasses, polyglossia or xeCJK (which needs ctex): only the fonts of the scripts the document
holds are loaded, so a Latin document compiles without CJK or Arabic fonts. A Noto font that is not installed
is left out (`\\IfFontExistsTF`): the text falls back to Latin Modern, which every TeX Live has, and the
document still compiles. The engines differ behind `\\ifLuaTeX`: right to left is TeX--XeT's `\\beginR…\\endR`
in XeTeX and `\\textdir TRT` in LuaTeX, CJK line breaks come from `\\XeTeXlinebreaklocale` or a Lua callback,
and LuaTeX shapes with HarfBuzz as XeTeX does.
Formulas are LaTeX already; one that KaTeX cannot parse, or that uses a command that reads or writes files or
redefines anything (`\\input`, `\\write`, `\\def`, `\\catcode`…), is printed as text instead — a document
must not be able to run TeX code in whoever compiles its `.tex`.
"""

from __future__ import annotations

import re

from services.core.elements import DERIVED_NOTE, FURNITURE, Element, ElementType
from services.core.pages import PageErrorEntry
from services.results.render import typeset
from services.results.render.derive import RenderPage, list_labels
from services.results.render.inline import INLINE_MATH, inline_latex, tex_escape
from services.results.render.sanitize import Cell, Table, parse_table

# (command, font, right-to-left, character class)
SCRIPTS: tuple[tuple[str, str, bool, str], ...] = (
    ("pmarabic", "Noto Naskh Arabic", True, "\u0600-\u06ff\u0750-\u077f\u08a0-\u08ff\ufb50-\ufdff\ufe70-\ufeff"),
    ("pmhebrew", "Noto Sans Hebrew", True, "\u0590-\u05ff\ufb1d-\ufb4f"),
    ("pmdevanagari", "Noto Sans Devanagari", False, "\u0900-\u097f"),
    ("pmbengali", "Noto Sans Bengali", False, "\u0980-\u09ff"),
    ("pmtamil", "Noto Sans Tamil", False, "\u0b80-\u0bff"),
    ("pmthai", "Noto Sans Thai", False, "\u0e00-\u0e7f"),
    ("pmgeorgian", "Noto Sans Georgian", False, "\u10a0-\u10ff"),
    ("pmarmenian", "Noto Sans Armenian", False, "\u0530-\u058f"),
    ("pmethiopic", "Noto Sans Ethiopic", False, "\u1200-\u139f"),
    ("pmhangul", "Noto Serif CJK KR", False, "\u1100-\u11ff\u3130-\u318f\uac00-\ud7af"),
    ("pmcjk", "Noto Serif CJK SC", False, "\u2e80-\u2fff\u3000-\u312f\u3190-\u9fff\uf900-\ufaff\uff00-\uffef"),
)
# The complex scripts' shaping, named for LuaTeX, whose HarfBuzz shapes Devanagari as plain text when the script
# is not given. XeTeX finds the script itself (told, it changed the text a PDF reader extracts from Arabic).
_SHAPED = {"pmarabic": "Arabic", "pmhebrew": "Hebrew", "pmdevanagari": "Devanagari", "pmbengali": "Bengali",
           "pmtamil": "Tamil", "pmthai": "Thai"}
CJK = re.compile("[\u1100-\u11ff\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")
# A run goes on across spaces and punctuation but not digits, which stay left-to-right inside `\\beginR`.
_RUNS = {command: re.compile(f"[{chars}]+(?:[\\s.,:;!?()\u060c\u061b\u061f-]*[{chars}]+)*")
         for command, _, _, chars in SCRIPTS}
_FORBIDDEN = re.compile(
    r"\\(?:def|gdef|edef|xdef|let|futurelet|newcommand|renewcommand|providecommand|DeclareRobustCommand|"
    r"newenvironment|renewenvironment|input|include|InputIfFileExists|write|immediate|openout|openin|read|"
    r"readline|catcode|csname|endcsname|expandafter|special|directlua|latelua|usepackage|RequirePackage|"
    r"documentclass|makeatletter|scantokens|jobname|outer|href|url|includegraphics|verbatiminput|loop|"
    r"everypar|everymath|output|shipout|end\{document\}|begin\{document\}|typeout|message|errmessage)(?![a-zA-Z])")
_ENVIRONMENT = re.compile(r"^\\begin\{(align|equation|gather|multline|flalign|eqnarray)\*?\}")
# KaTeX accepts these shorthands; LaTeX does not know them.
PROVIDED = (r"\providecommand{\R}{\mathbb{R}}\providecommand{\N}{\mathbb{N}}\providecommand{\Z}{\mathbb{Z}}"
            r"\providecommand{\Q}{\mathbb{Q}}\providecommand{\C}{\mathbb{C}}\providecommand{\operatornamewithlimits}"
            r"[1]{\operatorname*{#1}}\providecommand{\Bbb}[1]{\mathbb{#1}}\providecommand{\bold}[1]{\mathbf{#1}}"
            r"\providecommand{\lt}{<}\providecommand{\gt}{>}\providecommand{\bm}[1]{\boldsymbol{#1}}")
_COMMAND = re.compile(r"\\([A-Za-z]+)")
_ENVIRONMENT_NAME = re.compile(r"\\begin\{([A-Za-z]+\*?)\}")
_SECTIONS = {1: "section", 2: "subsection", 3: "subsubsection", 4: "paragraph", 5: "subparagraph", 6: "subparagraph"}


def _balanced(latex: str) -> bool:
    depth = 0
    for match in re.finditer(r"\\.|[{}]", latex):
        token = match.group(0)
        depth += 1 if token == "{" else -1 if token == "}" else 0
        if depth < 0:
            return False
    return depth == 0


class _Math:
    def __init__(self, formulas: list[tuple[str, bool]]) -> None:
        parsed = typeset.render_all(formulas) if typeset.available() else [""] * len(formulas)
        self.ok = {f for f, html in zip(formulas, parsed, strict=True) if html is not None}

    def kept(self) -> list[str]:
        return [latex for latex, display in self.ok if self.usable(latex, display)]

    def usable(self, latex: str, display: bool) -> bool:
        return (bool(latex.strip()) and (latex, display) in self.ok and _balanced(latex)
                and not _FORBIDDEN.search(latex))

    def inline(self, latex: str) -> str:
        return f"${latex}$" if self.usable(latex, False) else r"\texttt{" + tex_escape(f"${latex}$") + "}"

    def display(self, latex: str) -> str:
        if not self.usable(latex, True):
            return "\\begin{flushleft}\\ttfamily " + tex_escape(latex) + "\\end{flushleft}"
        if _ENVIRONMENT.match(latex.strip()):
            return latex.strip()
        return f"\\[\n{latex.strip()}\n\\]"


def _scripts(present: str) -> list[tuple[str, str, bool, str]]:
    return [s for s in SCRIPTS if _RUNS[s[0]].search(present)]


def _wrap_scripts(text: str) -> str:
    for command, _, rtl, _ in SCRIPTS:
        pattern = _RUNS[command]
        if pattern.search(text):
            opening, closing = ("{\\" + command + "\\pmrtl{", "}}") if rtl else ("{\\" + command + " ", "}")

            def wrap(match: re.Match[str], opening: str = opening, closing: str = closing) -> str:
                return opening + match.group(0) + closing

            text = pattern.sub(wrap, text)
    return text


def _cell_latex(text: str, math: _Math) -> str:
    out, last = [], 0
    for match in INLINE_MATH.finditer(text):
        out.append(_wrap_scripts(tex_escape(text[last:match.start()])))
        out.append(math.inline((match.group(1) or match.group(2) or "").strip()))
        last = match.end()
    out.append(_wrap_scripts(tex_escape(text[last:])))
    return "".join(out)


def table_latex(table: Table, math: _Math, breaks: dict[int, int] | None = None) -> str:
    """A longtable: header rows repeat on every page, spans become \\multicolumn/\\multirow. `breaks`: row ->
    page, where a table merged across pages goes on (a comment line there)."""
    # Place every cell on a grid first: rowspans from above push a row's cells to the right.
    covered: dict[tuple[int, int], tuple[int, int]] = {}  # (row, column) -> (origin row, origin column)
    placed: list[list[tuple[int, Cell]]] = []
    for r, row in enumerate(table.rows):
        c, line = 0, []
        for cell in row:
            while (r, c) in covered:
                c += 1
            for dr in range(cell.rowspan):
                for dc in range(cell.colspan):
                    covered[(r + dr, c + dc)] = (r, c)
            line.append((c, cell))
            c += cell.colspan
        placed.append(line)
    columns = max((c + 1 for (_, c) in covered), default=1)
    rows = len(table.rows)
    width = (f"\\dimexpr(\\linewidth-{2 * columns}\\tabcolsep-{columns + 1}\\arrayrulewidth)/{columns}\\relax")
    column = f">{{\\raggedright\\arraybackslash}}p{{{width}}}"
    lines = [r"{\scriptsize" if columns > 6 else r"{\small", f"\\begin{{longtable}}{{|*{{{columns}}}{{{column}|}}}}",
             r"\hline"]
    for r in range(rows):
        if breaks and r in breaks:
            lines.append(f"% table continues from page {breaks[r]}")
        starts = {c: cell for c, cell in placed[r]}
        parts: list[str] = []
        c = 0
        while c < columns:
            if c in starts:
                cell = starts[c]
                span_c, span_r = cell.colspan, min(cell.rowspan, rows - r)
                content = _cell_latex(cell.text, math)
                if cell.header and content:
                    content = r"\textbf{" + content + "}"
                if span_r > 1:
                    content = f"\\multirow{{{span_r}}}{{=}}{{{content}}}"
            elif (r, c) in covered:
                origin = covered[(r, c)]
                cell = dict(placed[origin[0]])[origin[1]]
                span_c, content = cell.colspan - (c - origin[1]), ""
            else:
                span_c, content = 1, ""
            span_c = max(1, min(span_c, columns - c))
            if span_c > 1:
                spanned = (f"\\dimexpr {span_c}\\dimexpr{width}\\relax+{2 * (span_c - 1)}\\tabcolsep"
                           f"+{span_c - 1}\\arrayrulewidth\\relax")
                left = "|" if c == 0 else ""
                content = f"\\multicolumn{{{span_c}}}{{{left}>{{\\raggedright\\arraybackslash}}p{{{spanned}}}|}}" \
                          f"{{{content}}}"
            parts.append(content)
            c += span_c
        # Rules below the row, except under cells whose rowspan goes on.
        open_below = [c for c in range(columns) if (r + 1, c) in covered and covered[(r + 1, c)][0] <= r]
        if not open_below:
            rule = r"\hline"
        else:
            segments, start = [], None
            for c in range(columns + 1):
                drawn = c < columns and c not in open_below
                if drawn and start is None:
                    start = c
                elif not drawn and start is not None:
                    segments.append(f"\\cline{{{start + 1}-{c}}}")
                    start = None
            rule = "".join(segments)
        lines.append(" & ".join(parts) + r" \\" + (" " + rule if rule else ""))
        if r + 1 == table.header_rows and rows > table.header_rows:
            lines.append(r"\endhead")
    lines += [r"\end{longtable}", "}"]
    return "\n".join(lines)


def _code(element: Element) -> str:
    lines = []
    for line in (element.text or "").split("\n"):
        stripped = line.lstrip(" ")
        lines.append("\\ " * (len(line) - len(stripped)) + tex_escape(stripped) if line.strip() else r"\mbox{}")
    return "\\begin{flushleft}\\ttfamily\\small\n" + "\\\\\n".join(_wrap_scripts(x) for x in lines) + \
        "\n\\end{flushleft}"


_FIGURE_PATH = re.compile(r"^figures/p[0-9]+-e[0-9]+\.(?:png|jpg)$")


def _figure(element: Element) -> str:
    """A kept figure's image from `figures/` beside the .tex (the result endpoint serves each one); without it
    there (the .tex alone) the document still compiles, with a framed note naming the file."""
    label = _wrap_scripts(tex_escape(f"{element.chart} chart" if element.chart else element.text or "figure"))
    if element.image and _FIGURE_PATH.match(element.image):
        missing = "\\fbox{" + label + " (" + tex_escape(element.image) + ")}"
        return (f"\\begin{{center}}\\IfFileExists{{{element.image}}}{{\\includegraphics[width=\\linewidth,"
                f"height=0.45\\textheight,keepaspectratio]{{{element.image}}}}}{{{missing}}}\\end{{center}}")
    return "\\begin{center}\\fbox{" + label + "}\\end{center}"


def element_latex(element: Element, math: _Math) -> str:
    kind = element.type

    def inline(markdown: str) -> str:
        return inline_latex(markdown, math.inline, _wrap_scripts)

    if kind in (ElementType.TITLE, ElementType.HEADING):
        level = 1 if kind is ElementType.TITLE else max(1, min(6, element.level or 2))
        source = re.sub(r"^\s*#{1,6}\s+", "", element.markdown) if element.markdown else element.text
        return f"\\{_SECTIONS[level]}*{{{inline(source.strip() or element.text)}}}"
    if kind is ElementType.LIST:
        items = [item for item in (element.items or [element.text]) if item.strip()]
        if not items:
            return ""
        env = "enumerate" if re.match(r"^\s*\d", element.markdown) else "itemize"
        # A list keeps the document's own numbers (exercise 150. to 159., not 1. to 10.), bullets among them too.
        labels = list_labels(element.markdown)
        if len(labels) == len(items) and any(labels):
            env = "itemize"
            marks = [f"[{{{label}}}]" if label else "" for label in labels]
        else:
            marks = [""] * len(items)
        # `{}` ends `\item`'s look for an optional label: an item that starts with `[` stays the item's text.
        body = "\n".join(f"\\item{mark}{{}} {inline(item)}" for mark, item in zip(marks, items, strict=True))
        return f"\\begin{{{env}}}\n{body}\n\\end{{{env}}}"
    if kind is ElementType.TABLE:
        table = parse_table(element.html or element.markdown)
        breaks = {part.rows[0]: part.page for part in (element.parts or [])[1:]}
        return table_latex(table, math, breaks) if table.rows else ""
    if kind is ElementType.FORMULA:
        return math.display(element.latex or element.text)
    if kind is ElementType.CODE:
        return _code(element)
    if kind is ElementType.FIGURE:
        derived = parse_table(element.html) if element.html and element.derived else None
        if derived is not None and derived.rows:  # a chart's data table, read from the drawing
            note = r"{\small\itshape " + tex_escape(DERIVED_NOTE.strip("*")) + r"\par}"
            return _figure(element) + "\n\n" + note + "\n" + table_latex(derived, math)
        return _figure(element)
    if kind in (ElementType.FORM_FIELD, ElementType.CHECKBOX) and element.checked is not None:
        box = r"$\boxtimes$" if element.checked else r"$\square$"
        return box + " " + _wrap_scripts(tex_escape(re.sub(r"^\[[ xX]\]\s*", "", element.markdown or element.text)))
    if kind is ElementType.CAPTION:
        return r"{\small\itshape " + inline(element.markdown or element.text) + r"\par}"
    if kind is ElementType.FOOTNOTE:
        return r"{\footnotesize " + inline(element.markdown or element.text) + r"\par}"
    return inline(element.markdown or element.text)


def _formulas(pages: list[RenderPage]) -> list[tuple[str, bool]]:
    found: list[tuple[str, bool]] = []
    for page in pages:
        for element in page.elements:
            if element.type is ElementType.FORMULA:
                found.append((element.latex or element.text, True))
                continue
            texts = [element.markdown]
            if element.type is ElementType.TABLE:  # the cells' text, as table_latex sees it, not the markup
                texts = [c.text for row in parse_table(element.html or element.markdown).rows for c in row]
            for match in (m for text in texts for m in INLINE_MATH.finditer(text)):
                found.append(((match.group(1) or match.group(2) or "").strip(), False))
    return found


# LuaTeX breaks a line only at glue: between two CJK characters (not before CJK punctuation) this puts some, as
# `\XeTeXlinebreaklocale` does for XeTeX. Lua inside `\directlua`: no `%`, `#`, `~`, backslash or `--` comment.
_LUA_CJK_BREAKS = r"""\directlua{
local GLYPH, GLUE = node.id("glyph"), node.id("glue")
local function cjk(c) return (c >= 0x1100 and c <= 0x11FF) or (c >= 0x2E80 and c <= 0x9FFF)
  or (c >= 0xAC00 and c <= 0xD7AF) or (c >= 0xF900 and c <= 0xFAFF) or (c >= 0xFF00 and c <= 0xFFEF) end
local function punctuation(c) return (c >= 0x3000 and c <= 0x303F) or (c >= 0xFF00 and c <= 0xFF65) end
luatexbase.add_to_callback("pre_linebreak_filter", function(head)
  for glyph in node.traverse_id(GLYPH, head) do
    local after = glyph.next
    if after and after.id == GLYPH and cjk(glyph.char) and cjk(after.char) and not punctuation(after.char) then
      local skip = node.new(GLUE)
      node.setglue(skip, 0, 65536)
      head = node.insert_after(head, glyph, skip)
    end
  end
  return head
end, "pagemill.cjk_breaks")
}"""


def _font(command: str, font: str) -> str:
    """A script's Noto font where it is installed; else its runs stay in the main font (glyphs may be missing,
    the document still compiles)."""
    return f"\\IfFontExistsTF{{{font}}}{{\\newfontfamily\\{command}{{{font}}}}}{{\\newcommand\\{command}{{}}}}"


def unknown_to_latex(formulas: list[str]) -> list[str]:
    """KaTeX knows commands and environments LaTeX lacks (`\\reals`, `\\isin`, `rcases`…): each one the kept
    formulas use is defined at the end of the preamble, where LaTeX has not defined it, to print its name (an
    environment to set its cells as a matrix), so one such formula does not stop the whole document."""
    commands = sorted({name for latex in formulas for name in _COMMAND.findall(latex)})
    environments = sorted({name for latex in formulas for name in _ENVIRONMENT_NAME.findall(latex)})
    if not commands and not environments:
        return []
    command = r"\ifdefined\NAME\else\newcommand{\NAME}{\ensuremath{\backslash\mathrm{NAME}}}\fi"
    environment = r"\ifcsname NAME\endcsname\else\newenvironment{NAME}{\begin{matrix}}{\end{matrix}}\fi"
    return (["% The formulas' commands and environments: one LaTeX lacks (KaTeX has it) prints its name."]
            + [command.replace("NAME", name) for name in commands]
            + [environment.replace("NAME", name) for name in environments])


def preamble(all_text: str, title: str, formulas: list[str] | None = None) -> str:
    """For XeLaTeX and LuaLaTeX alike: the engine's own right-to-left and line-breaking commands behind
    `\\ifLuaTeX`, and Noto fonts only where they are installed (else Latin Modern, which every TeX Live has)."""
    present = _scripts(all_text)
    shaping = [f"  \\defaultfontfeatures[{font}]{{Script={_SHAPED[command]}}}" for command, font, _, _ in present
               if command in _SHAPED]
    fonts = [r"\IfFontExistsTF{Noto Serif}{\setmainfont{Noto Serif}}{}"]
    fonts += [_font(command, font) for command, font, _, _ in present]
    if CJK.search(all_text):  # a line may end between two ideographs
        fonts += [r'\ifXeTeX\XeTeXlinebreaklocale "zh"\XeTeXlinebreakskip=0pt plus 1pt\relax\fi',
                  r"\ifLuaTeX", _LUA_CJK_BREAKS, r"\fi"]
    return "\n".join([
        r"% Made by pagemill from the document's element tree. Compile with: latexmk -xelatex document.tex",
        r"% or latexmk -lualatex document.tex (or xelatex/lualatex twice: longtable settles its column widths on the",
        r"% second run). Noto fonts where installed, else Latin Modern. Figures: figures/*.png beside this file",
        r"% (GET /v1/documents/{id}/figures/{name}); without them each figure is a framed note.",
        r"\documentclass[11pt]{article}",
        r"\usepackage[a4paper,margin=2cm]{geometry}",
        r"\usepackage{amsmath,amssymb}",
        r"\usepackage{iftex}",
        r"\usepackage{fontspec}",
        # LuaTeX: HarfBuzz shapes Arabic and Indic scripts as XeTeX does; \textdir where XeTeX has TeX--XeT.
        r"\ifLuaTeX",
        r"  \defaultfontfeatures{Renderer=HarfBuzz}",
        *shaping,
        r"  \newcommand{\pmrtl}[1]{{\textdir TRT #1}}",
        r"\else",
        r"  \TeXXeTstate=1",
        r"  \newcommand{\pmrtl}[1]{\beginR #1\endR}",
        r"\fi",
        *fonts,
        r"\usepackage{longtable,multirow,array}",
        r"\usepackage{graphicx}",
        r"\usepackage[normalem]{ulem}",
        r"\setlength{\parindent}{0pt}\setlength{\parskip}{0.6em}",
        PROVIDED,
        *unknown_to_latex(formulas or []),
        r"\begin{document}",
    ])


def render_latex(pages: list[RenderPage], *, title: str = "document", keep_furniture: bool = False) -> str:
    """`keep_furniture`: page headers and footers kept, small and labelled (`furniture=keep`)."""
    math = _Math(_formulas(pages))
    body: list[str] = []
    # The title (the filename) is not shown in the LaTeX, so it picks no font either: a cached copy's LaTeX,
    # made for another filename, must be the same as its own would be.
    words: list[str] = []
    for page in pages:
        body.append(f"% page {page.number}")
        if page.status != "succeeded":
            error: PageErrorEntry = page.error or {"code": "unknown", "message": ""}
            body.append(r"\emph{" + tex_escape(f"page {page.number}: {page.status} ({error.get('code', 'unknown')}: "
                                               f"{error.get('message', '')})") + "}")
            continue
        for element in page.elements:
            if element.type in FURNITURE:
                if keep_furniture and element.text.strip():
                    label = "page header" if element.type is ElementType.PAGE_HEADER else "page footer"
                    body.append(r"{\footnotesize\textit{" + label + r":} " + _wrap_scripts(tex_escape(element.text))
                                + r"\par}")
                    words.append(element.text)
                continue
            words.append(element.text)
            if rendered := element_latex(element, math):
                body.append(rendered)
    if not any(not part.startswith("% page ") for part in body):
        body.append(r"\mbox{}")  # a document with no text still makes a (blank) page
    return preamble(" ".join(words), title, math.kept()) + "\n\n" + "\n\n".join(body) + "\n\n\\end{document}\n"
