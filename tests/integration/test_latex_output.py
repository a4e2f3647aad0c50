"""document.tex of a real PDF: its text comes through the cpu engine and the renderer as the reader wrote it."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.core.settings import Settings
from services.results.render import katex
from services.results.render.formats import render_document
from services.runner import parse_locally
from tests.pdfs import make_pdf
from tests.tex import compile_tex, pdf_text, tex_errors

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
    if katex.available():
        assert "Einstein wrote $E=mc^2$ in 1905." in tex and "Figure 1: the curve of $y=x^2$" in tex
    else:  # without KaTeX nothing vouches for a formula: its source is printed
        assert "Einstein wrote \\texttt{\\$E=mc\\textasciicircum{}2\\$} in 1905." in tex


def test_list_items_that_open_with_a_bracket_compile_as_their_text(tex: str, tmp_path: Path) -> None:
    """`\\item [unbalanced item` stopped XeLaTeX; `\\item [x] done` printed "x" as the bullet and lost "[x]"."""
    (tmp_path / "document.tex").write_text(tex, encoding="utf-8")
    done = compile_tex(tmp_path, "xelatex")
    assert done.returncode == 0, tex_errors(done)
    text = pdf_text(tmp_path / "document.pdf")
    assert "[x] done" in text and "[unbalanced item" in text and "a plain item" in text
    assert "Einstein wrote" in text
