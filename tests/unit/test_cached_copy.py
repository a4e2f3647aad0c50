"""What a result-cache copy shows of a filename: its own, never the original's (erasure removes the original's)."""

from __future__ import annotations

from services.core.cache import retitled_html
from services.results.render.derive import RenderPage, markdown_elements
from services.results.render.html import render_html
from services.results.render.latex import render_latex


def _pages() -> list[RenderPage]:
    return [RenderPage(number=1, status="succeeded", elements=markdown_elements(
        "# Minutes\n\nThe <title>board</title> met.", 1))]


def test_a_copy_of_the_html_is_titled_as_if_rendered_for_its_own_filename() -> None:
    original = render_html(_pages(), title="Acme & Globex <merger>.pdf").encode()
    copied = retitled_html(original, "board-minutes \"final\".pdf")
    assert copied == render_html(_pages(), title="board-minutes \"final\".pdf").encode()
    assert b"Globex" not in copied


def test_the_latex_does_not_depend_on_the_filename_it_does_not_show() -> None:
    """Before, the filename's script chose fonts: an Arabic filename declared an Arabic font in the copy."""
    assert render_latex(_pages(), title="\u062a\u0642\u0631\u064a\u0631.pdf") == render_latex(_pages(),
                                                                                           title="report.pdf")
