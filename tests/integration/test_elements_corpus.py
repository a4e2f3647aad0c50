"""Element trees of real corpus pages from the cpu engine: boxes on the page, the Markdown their rendering."""

from __future__ import annotations

from pathlib import Path

from services.core.elements import ElementType, page_markdown
from services.worker.engines.base import PageOutput
from services.worker.engines.cpu import CpuEngine
from tests.corpus_pages import parse_file as parse


def assert_on_page(out: PageOutput) -> None:
    assert out.elements and out.width > 0 and out.height > 0
    assert out.markdown == page_markdown(out.elements) + "\n"
    for element in out.elements:
        assert element.bbox is not None
        x0, y0, x1, y1 = element.bbox
        assert -1 <= x0 < x1 <= out.width + 1 and -1 <= y0 < y1 <= out.height + 1, element


def test_text_layer_page_has_headings_lists_and_boxes_in_points(engine: CpuEngine, corpus: Path) -> None:
    out = parse(engine, corpus / "dev/docling_multi_page/multi_page.pdf")
    assert_on_page(out)
    assert (round(out.width), round(out.height)) == (595, 842)  # A4 in points
    kinds = [e.type for e in out.elements]
    assert ElementType.HEADING in kinds and ElementType.LIST in kinds and ElementType.PARAGRAPH in kinds
    heading = next(e for e in out.elements if e.type == ElementType.HEADING)
    assert heading.text == "The Evolution of the Word Processor" and heading.level == 2
    assert 60 < heading.bbox[1] < 100  # type: ignore[index]  # near the top, top-left origin


def test_scan_turned_upside_down_has_boxes_where_the_text_is_shown(engine: CpuEngine, corpus: Path) -> None:
    upright = parse(engine, corpus / "dev/docling_ocr_test/ocr_test.pdf")
    turned = parse(engine, corpus / "dev/docling_ocr_test_rotated_180/ocr_test_rotated_180.pdf")
    assert_on_page(upright)
    assert_on_page(turned)
    assert turned.rotation == 180
    a, b = upright.elements[0].bbox, turned.elements[0].bbox
    assert a is not None and b is not None
    mirrored = (upright.width - a[2], upright.height - a[3], upright.width - a[0], upright.height - a[1])
    assert all(abs(m - t) < 25 for m, t in zip(mirrored, b, strict=True)), (mirrored, b)


def test_image_page_counts_pixels_as_points(engine: CpuEngine, corpus: Path) -> None:
    out = parse(engine, corpus / "dev/tesseract_phototest-rotated-L/phototest-rotated-L.png")
    assert_on_page(out)
    assert (out.width, out.height) == (480, 640) and out.rotation == 90
    x0, y0, x1, y1 = out.elements[0].bbox  # type: ignore[misc]
    assert y1 - y0 > x1 - x0  # the lines run down the image as uploaded
