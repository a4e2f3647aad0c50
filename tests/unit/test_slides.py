"""Presentations are read natively from their slide parts: titles, list levels, tables, reading order."""

from __future__ import annotations

import io
import zipfile

import pytest

from services.core.errors import XmlEntities
from services.results.render.markdown import render_slides
from services.worker.office.slides import read_pptx

NS = ('xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
      'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" '
      'xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"')
NUMBERED = '<a:pPr><a:buAutoNum type="arabicPeriod"/></a:pPr>'
REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"


def rels(*targets: tuple[str, str, str]) -> str:
    body = "".join(f'<Relationship Id="{rid}" Type="{REL}/{kind}" Target="{target}"/>'
                   for rid, kind, target in targets)
    return f'<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">{body}</Relationships>'


def placeholder(kind: str, paragraphs: str, offset: tuple[int, int] | None = None) -> str:
    xfrm = f'<a:xfrm><a:off x="{offset[0]}" y="{offset[1]}"/><a:ext cx="1" cy="1"/></a:xfrm>' if offset else ""
    return (f'<p:sp><p:nvSpPr><p:cNvPr id="2" name="{kind}"/><p:cNvSpPr/><p:nvPr><p:ph type="{kind}"/></p:nvPr>'
            f'</p:nvSpPr><p:spPr>{xfrm}</p:spPr><p:txBody><a:bodyPr/>{paragraphs}</p:txBody></p:sp>')


def text_box(x: int, y: int, paragraphs: str) -> str:
    return (f'<p:sp><p:nvSpPr><p:cNvPr id="3" name="box"/><p:cNvSpPr txBox="1"/><p:nvPr/></p:nvSpPr><p:spPr>'
            f'<a:xfrm><a:off x="{x}" y="{y}"/><a:ext cx="1" cy="1"/></a:xfrm></p:spPr>'
            f'<p:txBody><a:bodyPr/>{paragraphs}</p:txBody></p:sp>')


def para(text: str, props: str = "") -> str:
    runs = "".join(f"<a:r><a:t>{piece}</a:t></a:r>" for piece in text.split("|"))  # "|" splits runs
    return f"<a:p>{props}{runs}</a:p>"


def table(x: int, y: int) -> str:
    def cell(text: str, attrs: str = "") -> str:
        return f'<a:tc{attrs}><a:txBody><a:bodyPr/><a:p><a:r><a:t>{text}</a:t></a:r></a:p></a:txBody></a:tc>'
    spanned, merged = cell("Region", ' gridSpan="2"'), cell("", ' hMerge="1"')
    rows = (f'<a:tr h="1">{spanned}{merged}{cell("Q1")}</a:tr>'
            f'<a:tr h="1">{cell("North")}{cell("East")}{cell("1 &amp; 2")}</a:tr>')
    return (f'<p:graphicFrame><p:nvGraphicFramePr><p:cNvPr id="4" name="table"/><p:cNvGraphicFramePr/><p:nvPr/>'
            f'</p:nvGraphicFramePr><p:xfrm><a:off x="{x}" y="{y}"/><a:ext cx="1" cy="1"/></p:xfrm><a:graphic>'
            f'<a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/table"><a:tbl><a:tblGrid/>'
            f'{rows}</a:tbl></a:graphicData></a:graphic></p:graphicFrame>')


def slide(shapes: str, hidden: bool = False) -> str:
    show = ' show="0"' if hidden else ""
    return f'<p:sld {NS}{show}><p:cSld><p:spTree><p:nvGrpSpPr/><p:grpSpPr/>{shapes}</p:spTree></p:cSld></p:sld>'


def deck(extra: dict[str, str] | None = None) -> bytes:
    """Three slides listed out of file order: the first has a title and a body placed by its layout, a text box
    above the body, a table below; the second is hidden; the third has two text boxes side by side."""
    bullets = (para("Fast", '<a:pPr lvl="0"/>') + para("on|ly on Tuesdays", '<a:pPr lvl="1"/>')
               + para("Cheap") + para("Plain words", "<a:pPr><a:buNone/></a:pPr>"))
    first = slide(placeholder("title", para("Quarterly |results")) + table(0, 5_000_000)
                  + placeholder("body", bullets) + text_box(0, 1_000_000, para("Before the list")))
    third = slide(text_box(6_000_000, 2_010_000, para("right column"))
                  + text_box(500_000, 2_000_000, para("Steps") + para("one", NUMBERED) + para("two", NUMBERED)))
    layout = slide(placeholder("title", para("x"), (0, 100)) + placeholder("body", para("x"), (0, 2_000_000)))
    parts = {
        "[Content_Types].xml": '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>',
        "ppt/presentation.xml": f'<p:presentation {NS}><p:sldIdLst><p:sldId id="256" r:id="rId3"/>'
                                f'<p:sldId id="257" r:id="rId2"/><p:sldId id="258" r:id="rId1"/></p:sldIdLst>'
                                f'<p:sldSz cx="12192000" cy="6858000"/></p:presentation>',
        "ppt/_rels/presentation.xml.rels": rels(("rId1", "slide", "slides/slide1.xml"),
                                                ("rId2", "slide", "slides/slide2.xml"),
                                                ("rId3", "slide", "slides/slide3.xml")),
        "ppt/slides/slide3.xml": first,
        "ppt/slides/_rels/slide3.xml.rels": rels(("rId1", "slideLayout", "../slideLayouts/slideLayout1.xml")),
        "ppt/slides/slide2.xml": slide(text_box(0, 0, para("hidden words")), hidden=True),
        "ppt/slides/slide1.xml": third,
        "ppt/slideLayouts/slideLayout1.xml": layout,
        **(extra or {}),
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in parts.items():
            archive.writestr(name, text)
    return buffer.getvalue()


def test_a_slide_gives_its_title_lists_with_levels_and_table_in_reading_order() -> None:
    slides = read_pptx(deck())
    assert [(s.number, s.page) for s in slides] == [(1, 1), (3, 2)]  # the hidden second slide is on no page
    first = slides[0]
    assert first.title == "Quarterly results"
    kinds = [(b.kind, b.text, b.level) for b in first.blocks if b.kind != "table"]
    assert kinds == [("paragraph", "Before the list", 0), ("list_item", "Fast", 0),
                     ("list_item", "only on Tuesdays", 1), ("list_item", "Cheap", 0),
                     ("paragraph", "Plain words", 0)]
    assert first.blocks[-1].kind == "table"
    assert first.blocks[-1].cells == [["Region", "", "Q1"], ["North", "East", "1 & 2"]]
    assert first.markdown == ("## Quarterly results\n\nBefore the list\n\n- Fast\n   - only on Tuesdays\n- Cheap"
                              "\n\nPlain words\n\n<table><tr><td colspan=\"2\">Region</td><td>Q1</td></tr>"
                              "<tr><td>North</td><td>East</td><td>1 &amp; 2</td></tr></table>")


def test_side_by_side_boxes_read_left_to_right_and_numbered_lists_count() -> None:
    third = read_pptx(deck())[1]
    assert third.title == ""
    assert third.markdown == "Steps\n\n1. one\n2. two\n\nright column"


def test_a_part_declaring_entities_is_refused_before_parsing() -> None:
    laughs = '<?xml version="1.0"?><!DOCTYPE p [<!ENTITY a "aaaa">]><p:sld/>'
    with pytest.raises(XmlEntities):
        read_pptx(deck({"ppt/slides/slide9.xml": laughs}))


def test_the_markdown_keeps_the_page_selection_and_an_empty_slide_keeps_its_page() -> None:
    slides = [{"number": 1, "page": 1, "markdown": "## One"}, {"number": 2, "page": 2, "markdown": ""},
              {"number": 3, "page": 3, "markdown": "## Three"}]
    pages = [{"page_number": 2, "status": "succeeded", "markdown": "text read from the picture"},
             {"page_number": 3, "status": "succeeded", "markdown": "rendered three"}]
    assert render_slides(slides, pages) == ("<!-- slide 2 -->\n\ntext read from the picture\n\n"
                                            "<!-- slide 3 -->\n\n## Three\n")


def test_garbled_numbers_and_a_missing_slide_list_do_not_stop_the_reading() -> None:
    garbled = slide(text_box(0, 0, para("still read", '<a:pPr lvl="deep"><a:buChar char="*"/></a:pPr>'))
                    .replace('y="0"', 'y="high"'))
    slides = read_pptx(deck({"ppt/slides/slide1.xml": garbled}))
    assert [(b.kind, b.text, b.level) for b in slides[1].blocks] == [("list_item", "still read", 0)]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("ppt/slides/slide1.xml", slide(text_box(0, 0, para("orphan"))))
    assert read_pptx(buffer.getvalue()) == []  # no presentation part: the rendered pages speak for the deck
