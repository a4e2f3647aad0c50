"""document.tex of a real PDF: its text comes through the cpu engine and the renderer as the reader wrote it, and
it compiles with XeLaTeX and with LuaLaTeX, with the Noto fonts and without them."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

from services.core.settings import Settings
from services.results.render import typeset
from services.results.render.derive import RenderPage, markdown_elements
from services.results.render.formats import render_document
from services.results.render.latex import render_latex
from services.runner import parse_locally
from tests.pdfs import make_pdf
from tests.tex import ENGINES, compile_tex, pdf_fonts, pdf_text, tex_errors, without_noto

pytestmark = pytest.mark.slow

LINES = ["Einstein wrote $E=mc^2$ in 1905.", "", "- [x] done", "- [unbalanced item", "- a plain item", "",
         "Figure 1: the curve of $y=x^2$"]


@pytest.fixture(scope="module")
def tex() -> str:
    settings = Settings()
    result = parse_locally(make_pdf(lines=LINES), settings, engine_name="cpu")
    rendered = render_document(result.pages, {"id": "doc", "filename": "einstein.pdf", "pages": result.pages},
                               settings)
    return rendered.bodies["latex"].decode()


def test_inline_formulas_of_a_pdf_stay_formulas(tex: str) -> None:
    """They came out as their placeholders' numbers: "Einstein wrote 0 in 1905."."""
    if typeset.available():
        assert "Einstein wrote $E=mc^2$ in 1905." in tex and "Figure 1: the curve of $y=x^2$" in tex
    else:  # without KaTeX nothing vouches for a formula: its source is printed
        assert "Einstein wrote \\texttt{\\$E=mc\\textasciicircum{}2\\$} in 1905." in tex


@pytest.mark.parametrize("engine", ENGINES)
def test_list_items_that_open_with_a_bracket_compile_as_their_text(tex: str, engine: str, tmp_path: Path) -> None:
    """`\\item [unbalanced item` stopped XeLaTeX; `\\item [x] done` printed "x" as the bullet and lost "[x]"."""
    (tmp_path / "document.tex").write_text(tex, encoding="utf-8")
    done = compile_tex(tmp_path, engine)
    assert done.returncode == 0, tex_errors(done)
    text = pdf_text(tmp_path / "document.pdf")
    assert "[x] done" in text and "[unbalanced item" in text and "a plain item" in text
    assert "Einstein wrote" in text


SCRIPTS = "مرحبا بالعالم 2026 and שלום עולם, नमस्ते, 你好世界, 안녕하세요, ภาษาไทย, Ελληνικά."


@pytest.mark.parametrize("engine", ENGINES)
def test_without_the_noto_fonts_the_tex_falls_back_to_latin_modern(tex: str, engine: str, tmp_path: Path) -> None:
    """Without fonts-noto-core the document stopped at `\\setmainfont{Noto Serif}` ("cannot be found"); now every
    Noto font is tested for and the text falls back to Latin Modern, which TeX Live always has."""
    scripts = render_latex([RenderPage(number=1, status="succeeded", elements=markdown_elements(SCRIPTS, 1))])
    body = tex.split("\\begin{document}")[1].split("\\end{document}")[0]  # the PDF's text, and every script
    (tmp_path / "document.tex").write_text(scripts.replace("\\end{document}", body + "\\end{document}"),
                                           encoding="utf-8")
    done = compile_tex(tmp_path, engine, env=without_noto(tmp_path))
    assert done.returncode == 0, tex_errors(done)
    fonts = pdf_fonts(tmp_path / "document.pdf")
    assert "LMRoman10-Regular" in fonts and not any(font.startswith("Noto") for font in fonts), fonts
    text = pdf_text(tmp_path / "document.pdf")
    assert "Einstein wrote" in text and "[unbalanced item" in text and "2026 and" in text


@pytest.mark.parametrize("engine", ENGINES)
def test_a_cjk_paragraph_breaks_into_lines(engine: str, tmp_path: Path) -> None:
    """Between ideographs XeTeX breaks by ICU's rules and LuaTeX at the glue a Lua callback puts there; without
    it LuaTeX set the paragraph as one line 3000 pt too wide."""
    paragraph = "中文段落，测试换行。" * 40
    tex = render_latex([RenderPage(number=1, status="succeeded", elements=markdown_elements(paragraph, 1))])
    (tmp_path / "document.tex").write_text(tex, encoding="utf-8")
    done = compile_tex(tmp_path, engine)
    assert done.returncode == 0, tex_errors(done)
    assert "Overfull \\hbox" not in (tmp_path / "document.log").read_text(errors="replace")
    text = pdf_text(tmp_path / "document.pdf")
    assert unicodedata.normalize("NFKC", paragraph) in re.sub(r"\s+", "", text)
    assert sum(1 for line in text.splitlines() if re.search("[\u4e00-\u9fff]", line)) >= 5


@pytest.mark.parametrize("engine", ENGINES)
def test_formulas_with_commands_only_katex_knows_compile(engine: str, tmp_path: Path) -> None:
    """Once inline formulas stopped turning into numbers, the corpus's `$t \\gt 0$` stopped both engines
    (Undefined control sequence): KaTeX accepts commands and environments LaTeX lacks."""
    if not typeset.available():
        pytest.skip("KaTeX is missing (`make katex`): without it every formula is printed as its source")
    markdown = "Now $t \\gt 0$ and $x \\isin \\reals$.\n\n$$\n\\begin{rcases} a & b \\\\ c & d \\end{rcases}\n$$"
    tex = render_latex([RenderPage(number=1, status="succeeded", elements=markdown_elements(markdown, 1))])
    assert "Now $t \\gt 0$ and $x \\isin \\reals$." in tex  # kept as math
    (tmp_path / "document.tex").write_text(tex, encoding="utf-8")
    done = compile_tex(tmp_path, engine)
    assert done.returncode == 0, tex_errors(done)
    text = pdf_text(tmp_path / "document.pdf")
    assert "Now t > 0 and x\\isin\\reals." in text and "c d" in text
