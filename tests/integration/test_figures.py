"""Figures kept: a real PDF with a picture through the cpu engine, then the document step's figure cropping —
the image is the picture (its colours where they were drawn), the caption is linked, and Markdown, HTML and
LaTeX name or show it; over the HTML's inline budget a figure is named, not inlined."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from PIL import Image

from services.cli.parse import TaskRequest, parse_files
from services.core.elements import Element, ElementType
from services.core.settings import Settings
from services.results.figures import KeptFigures, caption_of, crop_figures, page_image
from services.results.render.derive import document_pages
from services.results.render.html import render_html
from services.results.render.latex import render_latex
from services.results.render.markdown import render_markdown
from services.runner import page_inputs, parse_locally
from tests.pdfs import FIGURE_BOX, FIGURE_CAPTION, figure_pdf


@pytest.fixture(scope="module")
def parsed() -> tuple[list[dict[str, object]], KeptFigures]:
    data = figure_pdf()
    settings = Settings()
    result = parse_locally(data, settings, engine_name="cpu")
    _, pages = page_inputs(data)

    def pixels(entry: dict[str, object]) -> Image.Image:
        return page_image(pages[int(entry["page"]) - 1][2], float(entry["width"]), float(entry["height"]),  # type: ignore[arg-type]
                          settings)

    return result.pages, crop_figures(result.pages, pixels, document_id="doc")


def test_the_picture_is_cropped_at_the_stated_resolution_with_its_caption(
        parsed: tuple[list[dict[str, object]], KeptFigures]) -> None:
    entries, kept = parsed
    [asset] = kept.assets
    assert asset["path"] == f"figures/{asset['element_id']}.png" and asset["caption"] == FIGURE_CAPTION
    assert asset["bbox"] == pytest.approx(list(FIGURE_BOX), abs=2)
    assert (asset["width_px"], asset["height_px"]) == (600, 450)  # 300 x 225 pt at 144 dpi
    image = Image.open(io.BytesIO(kept.images[asset["path"]])).convert("RGB")
    assert image.size == (600, 450) and asset["bytes"] == len(kept.images[asset["path"]])
    red, blue = image.getpixel((20, 20)), image.getpixel((300, 225))  # the box's corner, the disc's centre
    assert red[0] > 150 > red[2] and blue[2] > 150 > blue[0], (red, blue)
    elements = [Element.model_validate(e) for e in entries[0]["elements"]]  # type: ignore[union-attr]
    figure = next(e for e in elements if e.type is ElementType.FIGURE)
    caption = next(e for e in elements if e.type is ElementType.CAPTION)
    assert figure.image == asset["path"] and figure.caption_id == caption.id == asset["caption_id"]
    markdown = render_markdown(entries)  # type: ignore[arg-type]
    assert f"![{FIGURE_CAPTION}]({asset['path']})" in markdown
    assert markdown.index("Body text") < markdown.index("![") < markdown.index("More body text")


def test_html_inlines_within_its_budget_and_latex_includes_the_file(
        parsed: tuple[list[dict[str, object]], KeptFigures]) -> None:
    entries, kept = parsed
    pages = document_pages(entries)  # type: ignore[arg-type]
    path = kept.assets[0]["path"]
    inlined = render_html(pages, figures=kept.images, inline_budget=10_000_000)
    assert '<img src="data:image/png;base64,' in inlined and f'alt="{FIGURE_CAPTION}"' in inlined
    named = render_html(pages, figures=kept.images, inline_budget=1000)
    assert "data:image" not in named and f"{path}]" in named
    latex = render_latex(pages)
    assert "\\usepackage{graphicx}" in latex
    assert f"\\IfFileExists{{{path}}}{{\\includegraphics[width=\\linewidth" in latex


def test_a_caption_is_linked_only_when_it_is_next_to_the_figure_and_not_a_tables() -> None:
    def element(n: int, kind: ElementType, text: str = "") -> Element:
        return Element(id=f"p1-e{n}", type=kind, page=1, bbox=None, text=text, markdown=text)
    elements = [element(1, ElementType.CAPTION, "Table 2: costs"), element(2, ElementType.FIGURE),
                element(3, ElementType.PARAGRAPH, "x"), element(4, ElementType.PARAGRAPH, "y"),
                element(5, ElementType.CAPTION, "Figure 3: far away")]
    assert caption_of(elements, 1) is None
    elements[2] = element(3, ElementType.CAPTION, "Fig. 2: near")
    found = caption_of(elements, 1)
    assert found is not None and found.id == "p1-e3"


def test_a_page_that_cannot_be_read_keeps_its_figure_as_a_placeholder() -> None:
    entry = {"page": 1, "page_number": 1, "status": "succeeded", "width": 100.0, "height": 100.0, "markdown": "",
             "elements": [Element(id="p1-e1", type=ElementType.FIGURE, page=1, bbox=(10, 10, 50, 50)
                                  ).model_dump(mode="json")]}

    def gone(_: dict[str, object]) -> Image.Image:
        raise FileNotFoundError("source deleted")

    kept = crop_figures([entry], gone)
    assert kept.assets == [] and entry["elements"][0].get("image") is None  # type: ignore[index]


def test_pagemill_parse_saves_the_images_beside_the_files_that_link_them(tmp_path: Path) -> None:
    source = tmp_path / "report one.pdf"
    source.write_bytes(figure_pdf())
    out = tmp_path / "out"
    assert parse_files([source], out, server=None, api_key=None, mode=None, engine="cpu", settings=Settings(),
                       formats=["markdown", "latex", "json"])
    [image] = (out / "report one.figures").iterdir()
    assert image.name.endswith(".png") and Image.open(image).size == (600, 450)
    assert f"![{FIGURE_CAPTION}](report%20one.figures/{image.name})" in (out / "report one.md").read_text()
    assert json.loads((out / "report one.json").read_text())["figures"][0]["path"] == f"figures/{image.name}"
    # a folder name TeX cannot take as a path: the .tex keeps figures/ (it compiles with a framed note)
    assert f"\\IfFileExists{{figures/{image.name}}}" in (out / "report one.tex").read_text()
    assert parse_files([source], tmp_path / "none", server=None, api_key=None, mode=None, engine="cpu",
                       settings=Settings(), formats=["markdown"], task=TaskRequest(figures=False))
    assert not (tmp_path / "none" / "report one.figures").exists()


def test_a_blank_crop_is_not_kept() -> None:
    entry = {"page": 1, "page_number": 1, "status": "succeeded", "width": 100.0, "height": 100.0, "markdown": "",
             "elements": [Element(id="p1-e1", type=ElementType.FIGURE, page=1, bbox=(0, 0, 50, 50)
                                  ).model_dump(mode="json")]}
    white = Image.new("RGB", (200, 200), "white")
    assert crop_figures([entry], lambda _: white).assets == []
    white.paste((0, 0, 0), (10, 10, 60, 60))  # something drawn: kept
    assert len(crop_figures([entry], lambda _: white).assets) == 1
