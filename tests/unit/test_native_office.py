"""Word, HTML, EPUB and e-mail read from their own structure: what each construct becomes in the element tree."""

from __future__ import annotations

import io
import zipfile

import pytest

from services.core.elements import ElementType, page_markdown
from services.core.errors import CorruptDocument
from services.core.formats import DOCX, EML, EPUB, HTML
from services.worker.office.docx import read_docx
from services.worker.office.native import read_native
from services.worker.office.web import read_html
from tests.office_files import docx

_NS = ('xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" '
       'xmlns:m="http://schemas.openxmlformats.org/officeDocument/2006/math" '
       'xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing"')
_STYLES = (f'<w:styles {_NS}>'
           '<w:style w:type="paragraph" w:styleId="Heading2"><w:name w:val="heading 2"/></w:style>'
           '<w:style w:type="paragraph" w:styleId="Bulleted"><w:name w:val="List Bullet"/>'
           '<w:pPr><w:numPr><w:numId w:val="1"/></w:numPr></w:pPr></w:style></w:styles>')
_NUMBERING = (f'<w:numbering {_NS}>'
              '<w:abstractNum w:abstractNumId="0"><w:lvl w:ilvl="0"><w:numFmt w:val="bullet"/></w:lvl>'
              '<w:lvl w:ilvl="1"><w:numFmt w:val="decimal"/></w:lvl></w:abstractNum>'
              '<w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num></w:numbering>')
_FOOTNOTES = (f'<w:footnotes {_NS}><w:footnote w:type="separator" w:id="-1"><w:p><w:r><w:t>---</w:t></w:r></w:p>'
              '</w:footnote><w:footnote w:id="1"><w:p><w:r><w:t>A note at the foot.</w:t></w:r></w:p></w:footnote>'
              '</w:footnotes>')


def _p(inner: str, style: str = "", num: tuple[int, int] | None = None) -> str:
    props = (f'<w:pStyle w:val="{style}"/>' if style else "") + (
        f'<w:numPr><w:ilvl w:val="{num[1]}"/><w:numId w:val="{num[0]}"/></w:numPr>' if num else "")
    return f"<w:p><w:pPr>{props}</w:pPr>{inner}</w:p>"


def _r(text: str) -> str:
    return f'<w:r><w:t xml:space="preserve">{text}</w:t></w:r>'


def _tc(text: str, props: str = "") -> str:
    return f"<w:tc><w:tcPr>{props}</w:tcPr>{_p(_r(text))}</w:tc>"


def _word(body: str) -> bytes:
    document = f'<?xml version="1.0" encoding="UTF-8"?><w:document {_NS}><w:body>{body}</w:body></w:document>'
    return docx(document.encode(), {"word/styles.xml": _STYLES.encode(), "word/numbering.xml": _NUMBERING.encode(),
                                    "word/footnotes.xml": _FOOTNOTES.encode()})


def test_docx_headings_lists_and_the_current_text_of_tracked_changes() -> None:
    elements = read_docx(_word(
        _p(_r("Ducks"), style="Heading2")
        + _p(_r("Kept ") + f'<w:ins w:id="1">{_r("inserted ")}</w:ins>'
             + '<w:del w:id="2"><w:r><w:delText>deleted</w:delText></w:r></w:del>' + _r("text."))
        + _p(_r("by its style"), style="Bulleted")
        + _p(_r("numbered, nested"), num=(1, 1))
        + _p(_r("back out"), num=(1, 0))
        + _p(_r("After the list."))))
    kinds = [e.type for e in elements]
    assert kinds == [ElementType.HEADING, ElementType.PARAGRAPH, ElementType.LIST, ElementType.PARAGRAPH]
    assert elements[0].level == 2 and elements[0].markdown == "## Ducks"
    assert elements[1].text == "Kept inserted text."
    assert elements[2].markdown == "- by its style\n    1. numbered, nested\n- back out"
    assert elements[2].items == ["by its style", "numbered, nested", "back out"]
    assert all(e.page == 1 and e.bbox is None for e in elements)
    assert [e.id for e in elements] == ["p1-e1", "p1-e2", "p1-e3", "p1-e4"]


def test_docx_table_spans_footnotes_formulas_and_image_alt_text() -> None:
    merged, spanned = '<w:vMerge w:val="restart"/>', '<w:gridSpan w:val="2"/>'
    table = ("<w:tbl>"
             f"<w:tr>{_tc('A', spanned)}{_tc('B', merged)}</w:tr>"
             f"<w:tr>{_tc('C')}{_tc('D')}{_tc('', '<w:vMerge/>')}</w:tr></w:tbl>")
    math = ('<m:oMathPara><m:oMath><m:f><m:num><m:r><m:t>a</m:t></m:r></m:num><m:den><m:r><m:t>b</m:t></m:r>'
            '</m:den></m:f></m:oMath></m:oMathPara>')
    image = ('<w:r><w:drawing><wp:inline><wp:docPr id="1" name="Picture 1" descr="A duck"/></wp:inline>'
             '</w:drawing></w:r>')
    elements = read_docx(_word(table + _p(_r("Said so") + '<w:r><w:footnoteReference w:id="1"/></w:r>')
                               + _p(math) + _p(image)))
    kinds = [e.type for e in elements]
    assert kinds == [ElementType.TABLE, ElementType.PARAGRAPH, ElementType.FORMULA, ElementType.FIGURE,
                     ElementType.FOOTNOTE]
    assert elements[0].html == ('<table><tr><td colspan="2">A</td><td rowspan="2">B</td></tr>'
                                "<tr><td>C</td><td>D</td></tr></table>")
    assert elements[1].text == "Said so[^f1]"
    assert elements[2].latex == r"\frac{a}{b}"
    assert elements[3].markdown == "![A duck]()"
    assert elements[4].markdown == "[^f1]: A note at the foot."


def test_a_file_that_is_not_a_docx_is_refused_for_libreoffice_to_try() -> None:
    with pytest.raises(CorruptDocument):
        read_docx(b"PK\x03\x04 not really a zip")
    with pytest.raises(CorruptDocument):
        read_docx(docx(b"<not-a-document/>"))


def test_html_drops_scripts_and_markup_and_keeps_structure() -> None:
    page = b"""<html><head><title>Duck facts</title><style>p{color:red}</style></head><body>
    <script>alert('x')</script><h2>Kinds</h2><p>Ducks <b>swim</b> <a href="javascript:alert(1)">well</a>.</p>
    <ul><li>Mallard<ul><li>Drake</li></ul></li><li>Teal</li></ul>
    <ol><li>first</li><li>second</li></ol>
    <table><caption>Sizes</caption><tr><th colspan="2">Name &amp; size</th></tr>
    <tr><td rowspan="2">Eider</td><td>70 cm<table><tr><td>inner</td></tr></table></td></tr>
    <tr><td>60 cm</td></tr></table>
    <figure><img src="x.png" alt="A teal" onerror="alert(1)"><figcaption>Figure 1: a teal</figcaption></figure>
    <pre>  code  kept</pre><div>Loose text <img src=y alt="inline"> in a div</div></body></html>"""
    elements = read_html(page)
    markdown = page_markdown(elements)
    assert "alert" not in markdown and "color" not in markdown and "onerror" not in markdown
    assert [e.type for e in elements] == [
        ElementType.TITLE, ElementType.HEADING, ElementType.PARAGRAPH, ElementType.LIST, ElementType.LIST,
        ElementType.CAPTION, ElementType.TABLE, ElementType.FIGURE, ElementType.CAPTION, ElementType.CODE,
        ElementType.PARAGRAPH]
    assert elements[0].markdown == "# Duck facts" and elements[1].level == 2
    assert elements[2].text == "Ducks swim well."
    assert elements[3].markdown == "- Mallard\n    - Drake\n- Teal"
    assert elements[4].markdown == "1. first\n2. second" and elements[4].ordered
    assert elements[6].html == ('<table><tr><th colspan="2">Name &amp; size</th></tr><tr><td rowspan="2">Eider</td>'
                                "<td>70 cm inner</td></tr><tr><td>60 cm</td></tr></table>")
    assert elements[7].text == "A teal" and elements[8].text == "Figure 1: a teal"
    assert elements[9].markdown == "```\n  code  kept\n```"
    assert elements[10].text == "Loose text inline in a div"


def test_html_title_is_not_repeated_when_the_body_opens_with_it() -> None:
    elements = read_html(b"<html><head><title>Ducks</title></head><body><h1>Ducks</h1><p>Quack.</p></body></html>")
    assert [e.markdown for e in elements] == ["# Ducks", "Quack."]


def _epub(chapters: list[str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("mimetype", "application/epub+zip")
        archive.writestr("META-INF/container.xml", '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:'
                         'names:tc:opendocument:xmlns:container"><rootfiles><rootfile full-path="OEBPS/book.opf" '
                         'media-type="application/oebps-package+xml"/></rootfiles></container>')
        items = "".join(f'<item id="c{i}" href="c{i}.xhtml" media-type="application/xhtml+xml"/>'
                        for i in range(len(chapters)))
        # the spine, not the manifest, gives the order: backwards here
        spine = "".join(f'<itemref idref="c{i}"/>' for i in reversed(range(len(chapters))))
        archive.writestr("OEBPS/book.opf", f'<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" '
                         f'version="3.0"><manifest>{items}</manifest><spine>{spine}</spine></package>')
        for i, body in enumerate(chapters):
            archive.writestr(f"OEBPS/c{i}.xhtml", f'<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml">'
                             f"<head><title>Chapter file {i}</title></head><body>{body}</body></html>")
    return buffer.getvalue()


def test_epub_reads_its_spine_in_order_and_eml_its_headers_body_and_attachments() -> None:
    elements, _ = read_native(_epub(["<h2>Second</h2><p>Later words.</p>", "<h1>First</h1><p>Early words.</p>"]),
                              EPUB)
    assert [e.markdown for e in elements] == ["# First", "Early words.", "## Second", "Later words."]
    book, _ = read_native(_epub(["<h1>Two</h1>", "<h1>One</h1>"]), EPUB)
    assert [e.type for e in book] == [ElementType.TITLE, ElementType.HEADING]  # one title per book
    assert [e.id for e in elements] == ["p1-e1", "p1-e2", "p1-e3", "p1-e4"]
    mail = (b"From: Alice <alice@example.com>\r\nTo: Bob <bob@example.com>\r\nSubject: Ducks\r\nMIME-Version: 1.0\r\n"
            b'Content-Type: multipart/mixed; boundary="b"\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\n'
            b"Hello Bob,\r\n\r\nLine one\r\nline two.\r\n--b\r\nContent-Type: application/pdf\r\n"
            b'Content-Disposition: attachment; filename="notes.pdf"\r\n\r\n%PDF-1.4\r\n--b--\r\n')
    elements, attachments = read_native(mail, EML)
    markdown = page_markdown(elements)
    assert elements[0].type == ElementType.TABLE and "Alice" in elements[0].text and "Ducks" in elements[0].text
    assert "Hello Bob,\n\nLine one line two." in markdown
    assert "notes.pdf (application/pdf" in markdown
    assert [a.filename for a in attachments] == ["notes.pdf"]


def test_read_native_dispatches_by_media_type() -> None:
    assert read_native(b"<p>Plain words</p>", HTML)[0][0].text == "Plain words"
    assert read_native(_word(_p(_r("Word words"))), DOCX)[0][0].text == "Word words"
    with pytest.raises(ValueError):
        read_native(b"", "application/pdf")


def test_docx_rows_that_skip_grid_columns_keep_them_as_empty_cells() -> None:
    skipped = '<w:tr><w:trPr><w:gridBefore w:val="2"/></w:trPr>' + _tc("last") + "</w:tr>"
    table = read_docx(_word(f"<w:tbl><w:tr>{_tc('a')}{_tc('b')}{_tc('c')}</w:tr>{skipped}</w:tbl>"))[0]
    assert table.html == ("<table><tr><td>a</td><td>b</td><td>c</td></tr>"
                          "<tr><td></td><td></td><td>last</td></tr></table>")


def test_lists_inside_html_table_cells_keep_their_markers() -> None:
    [table] = read_html(b"<table><tr><td><ul><li>Pond</li><li>Marsh</li></ul></td>"
                        b"<td><ol><li>Fly</li><li>Nest</li></ol></td></tr></table>")
    assert table.html == "<table><tr><td>- Pond - Marsh</td><td>1. Fly 2. Nest</td></tr></table>"


def test_sub_and_superscripts_keep_their_tags_in_markdown_and_tables_not_in_text() -> None:
    elements = read_html(b"<p>H<sub>2</sub>O and 10<sup>6</sup></p><table><tr><td>x<sup>2</sup></td></tr></table>")
    assert elements[0].markdown == "H<sub>2</sub>O and 10<sup>6</sup>" and elements[0].text == "H2O and 106"
    assert elements[1].html == "<table><tr><td>x<sup>2</sup></td></tr></table>" and elements[1].text == "x2"
    sup = '<w:r><w:rPr><w:vertAlign w:val="superscript"/></w:rPr><w:t>6</w:t></w:r>'
    [paragraph] = read_docx(_word(_p(_r("10") + sup)))
    assert paragraph.markdown == "10<sup>6</sup>" and paragraph.text == "106"


def test_a_docx_nested_past_the_readers_depth_is_refused_not_crashed_on() -> None:
    deep = "<w:sdt><w:sdtContent>" * 3000 + _p(_r("deep")) + "</w:sdtContent></w:sdt>" * 3000
    with pytest.raises(CorruptDocument):
        read_docx(_word(deep))


def test_links_keep_absolute_web_and_mail_targets_only() -> None:
    [paragraph] = read_html(b'<p>See <a href="https://example.org/a b(1)">the [docs]</a>, <a href="/wiki/Duck">Duck</a>'
                            b' and <a href="javascript:alert(1)">this</a>; <a href="mailto:a@b.org">mail</a>.</p>')
    assert paragraph.markdown == ("See [the (docs)](https://example.org/a%20b%281%29), Duck and this; "
                                  "[mail](mailto:a@b.org).")
    assert paragraph.text == "See the (docs), Duck and this; mail."
    rels = ('<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            '<Relationship Id="rId9" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
            'hyperlink" Target="https://example.org/" TargetMode="External"/></Relationships>')
    body = _p(_r("Go to ") + f'<w:hyperlink xmlns:r="{_RELS_NS}" r:id="rId9">{_r("the site")}</w:hyperlink>')
    document = f'<?xml version="1.0" encoding="UTF-8"?><w:document {_NS}><w:body>{body}</w:body></w:document>'
    [linked] = read_docx(docx(document.encode(), {"word/_rels/document.xml.rels": rels.encode()}))
    assert linked.markdown == "Go to [the site](https://example.org/)" and linked.text == "Go to the site"


_RELS_NS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"


@pytest.mark.parametrize("page", [
    "<p>café – naïve 日本</p>".encode(),  # no declaration: UTF-8, not libxml2's Latin-1
    '<meta charset="iso-8859-1"><p>café – naïve</p>'.encode("latin-1", errors="replace"),
    b"\xef\xbb\xbf<p>caf\xc3\xa9 \xe2\x80\x93 na\xc3\xafve \xe6\x97\xa5\xe6\x9c\xac</p>",
])
def test_html_text_is_decoded_as_the_page_says_or_as_utf8(page: bytes) -> None:
    assert read_html(page)[0].text.startswith("café")


_MULTI = (f'<w:numbering {_NS}><w:abstractNum w:abstractNumId="5">'
          '<w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="decimal"/><w:lvlText w:val="%1."/></w:lvl>'
          '<w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="decimal"/><w:lvlText w:val="%1.%2"/></w:lvl>'
          '<w:lvl w:ilvl="2"><w:start w:val="1"/><w:numFmt w:val="lowerRoman"/><w:lvlText w:val="(%3)"/></w:lvl>'
          '</w:abstractNum><w:num w:numId="4"><w:abstractNumId w:val="5"/></w:num></w:numbering>')


def test_word_numbering_labels_headings_and_multi_level_items_and_keeps_counting_across_text() -> None:
    body = (_p(_r("Scope"), style="Heading2", num=(4, 0)) + _p(_r("Terms"), num=(4, 1))
            + _p(_r("Between the items."))
            + _p(_r("Units"), num=(4, 1)) + _p(_r("metres"), num=(4, 2)) + _p(_r("seconds"), num=(4, 2))
            + _p(_r("Method"), num=(4, 0)))
    document = f'<?xml version="1.0" encoding="UTF-8"?><w:document {_NS}><w:body>{body}</w:body></w:document>'
    elements = read_docx(docx(document.encode(), {"word/styles.xml": _STYLES.encode(),
                                                  "word/numbering.xml": _MULTI.encode()}))
    assert [e.markdown for e in elements] == [
        "## 1. Scope", "- 1.1 Terms", "Between the items.", "- 1.2 Units\n    1. metres\n    2. seconds\n2. Method"]
    assert elements[0].text == "1. Scope" and elements[3].items == ["1.2 Units", "metres", "seconds", "Method"]
