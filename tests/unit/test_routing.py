"""The mode router: fast → cpu, accurate → vLLM, balanced → vLLM only for pages the cpu engine would get wrong."""

from __future__ import annotations

import pytest

from services.core.pdf import PDF, PNG
from services.worker.routing import page_traits, route_page
from tests.pdfs import SENTENCE, make_pdf, text_page


def test_a_plain_text_page_is_easy() -> None:
    traits = page_traits(PDF, text_page())
    assert traits.text_layer_usable and traits.text_chars > 500 and traits.reasons == ()
    assert route_page("balanced", "vllm", PDF, text_page()) == ("cpu", ())


@pytest.mark.parametrize(("page", "reason"), [
    (make_pdf(), "no_text_layer"),  # a page with nothing to read from its text layer (a scan without OCR)
    (make_pdf(lines=[SENTENCE] * 12, rules=30), "tables"),
    (make_pdf(lines=[SENTENCE] * 12, image_box=(72, 100, 400, 300)), "figures"),
    (make_pdf(lines=[SENTENCE] * 8, symbol_lines=["∑ ≤ ∫ α ≥ β ∈ ∂"]), "formulas"),
    (make_pdf(lines=["Note: see the chart below for details."], image_box=(500, 40, 60, 40)), "low_text_coverage"),
])
def test_hard_pages_go_to_vllm_with_the_reason(page: bytes, reason: str) -> None:
    engine, reasons = route_page("balanced", "vllm", PDF, page)
    assert engine == "vllm" and reason in reasons, reasons


def test_images_are_always_hard_and_modes_other_than_balanced_do_not_look() -> None:
    assert route_page("balanced", "vllm", PNG, None) == ("vllm", ("no_text_layer",))
    assert route_page("accurate", "vllm", PDF, text_page()) == ("vllm", ())
    assert route_page("fast", "cpu", PDF, make_pdf()) == ("cpu", ())
    # Without a vLLM engine configured, balanced has nothing to route to.
    assert route_page("balanced", "cpu", PDF, make_pdf()) == ("cpu", ())


def test_a_page_pdfium_cannot_read_goes_to_vllm() -> None:
    assert route_page("balanced", "vllm", PDF, b"%PDF-1.4 broken") == ("vllm", ("unreadable",))
