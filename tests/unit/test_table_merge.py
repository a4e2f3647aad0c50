"""Tables that run across pages become one table with `parts`: no row lost or reordered (long tables, repeated
headers or not, three pages), the merge undone from `parts`, and what must stay apart stays apart."""

from __future__ import annotations

from typing import Any

from services.core.elements import Element, ElementType, page_markdown
from services.results.render.derive import document_pages
from services.results.render.html import render_html
from services.results.render.latex import render_latex
from services.results.render.sanitize import parse_table
from services.results.tables import merge_tables

HEADER = ["Item", "Quantity", "Price"]


def table_html(rows: list[list[str]], *, header: bool) -> str:
    head = "<thead><tr>" + "".join(f"<th>{c}</th>" for c in HEADER) + "</tr></thead>" if header else ""
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table>{head}<tbody>{body}</tbody></table>"


def page(number: int, elements: list[Element]) -> dict[str, Any]:
    body = page_markdown(elements)
    return {"page": number, "page_number": number, "status": "succeeded", "width": 612.0, "height": 792.0,
            "markdown": body + "\n", "elements": [e.model_dump(mode="json") for e in elements]}


def element(number: int, n: int, kind: ElementType, text: str = "", html: str | None = None,
            bbox: tuple[float, float, float, float] | None = (72, 100, 540, 700)) -> Element:
    return Element(id=f"p{number}-e{n}", type=kind, page=number, bbox=bbox, text=text, markdown=html or text,
                   html=html)


def rows(first: int, count: int) -> list[list[str]]:
    return [[f"item {i}", str(i), f"{i}.00"] for i in range(first, first + count)]


def long_document(*, repeat_header: bool) -> list[dict[str, Any]]:
    """Three pages: 40 rows under a header, 45 more (the header repeated or not), then 12 and a paragraph."""
    return [
        page(1, [element(1, 1, ElementType.PARAGRAPH, "Orders of the quarter."),
                 element(1, 2, ElementType.TABLE, "t", table_html(rows(1, 40), header=True)),
                 element(1, 3, ElementType.PAGE_FOOTER, "Page 1", bbox=(280, 760, 330, 770))]),
        page(2, [element(2, 1, ElementType.PAGE_HEADER, "Orders", bbox=(72, 20, 200, 30)),
                 element(2, 2, ElementType.TABLE, "t", table_html(rows(41, 45), header=repeat_header),
                         bbox=(73, 40, 541, 740))]),
        page(3, [element(3, 1, ElementType.TABLE, "t", table_html(rows(86, 12), header=repeat_header),
                         bbox=(72, 40, 540, 300)),
                 element(3, 2, ElementType.PARAGRAPH, "Totals follow.")]),
    ]


def cells(table_markup: str) -> list[list[str]]:
    return [[c.text for c in row] for row in parse_table(table_markup).rows]


def test_a_long_table_over_three_pages_keeps_every_row_in_order() -> None:
    for repeat_header in (True, False):
        entries = long_document(repeat_header=repeat_header)
        assert merge_tables(entries) == 2
        merged = Element.model_validate(entries[0]["elements"][1])
        assert cells(merged.html or "") == [HEADER, *rows(1, 97)]  # 97 data rows, the header once
        assert merged.parts is not None
        assert [(p.page, p.rows, p.source_id) for p in merged.parts] == [
            (1, (0, 41), "p1-e2"), (2, (41, 86), "p2-e2"), (3, (86, 98), "p3-e1")]
        for part in merged.parts:  # undo: each part as its page read it
            original = cells(part.html)
            assert original[-1] == cells(merged.html or "")[part.rows[1] - 1]
        assert "<!-- table continues from page 2 -->" in merged.markdown
        assert merged.markdown.index("page 2 -->") < merged.markdown.index("item 41") < \
            merged.markdown.index("page 3 -->") < merged.markdown.index("item 86")
        assert [e["type"] for e in entries[1]["elements"]] == ["page_header"]
        assert [e["type"] for e in entries[2]["elements"]] == ["paragraph"]
        assert entries[2]["markdown"] == "Totals follow.\n" and "item 90" in entries[0]["markdown"]
        html = render_html(document_pages(entries))
        assert html.count('<tr data-page="2">') == 1 and html.count('<tr data-page="3">') == 1
        latex = render_latex(document_pages(entries))
        assert latex.index("% table continues from page 2") < latex.index("item 41 &") < \
            latex.index("% table continues from page 3") < latex.index("item 86 &")


def test_tables_that_do_not_line_up_stay_apart() -> None:
    other_columns = "<table><tr><td>a</td><td>b</td></tr></table>"
    entries = long_document(repeat_header=True)
    entries[1]["elements"][1]["html"] = other_columns  # two columns, not three
    assert merge_tables(entries) == 0
    entries = long_document(repeat_header=True)
    entries[1]["elements"][1]["bbox"] = [300, 40, 540, 740]  # another left edge: another table
    assert merge_tables(entries) == 0
    entries = long_document(repeat_header=True)
    text = element(2, 3, ElementType.PARAGRAPH, "A paragraph first.").model_dump(mode="json")
    entries[1]["elements"].insert(1, text)  # text before the next page's table: a new table (going on to page 3)
    assert merge_tables(entries) == 1 and entries[0]["elements"][1].get("parts") is None
    assert [p["page"] for p in entries[1]["elements"][2]["parts"]] == [2, 3]
    for heading, merges in (("Pesticides", 1), ("Table 1 (continued)", 2), ("Orders of the quarter.", 2)):
        entries = long_document(repeat_header=True)  # a heading before the next part: a new table unless it
        entries[0]["elements"][0]["type"] = "heading"  # says the table goes on or repeats the table's title
        entries[1]["elements"].insert(1, element(2, 3, ElementType.HEADING, heading).model_dump(mode="json"))
        assert merge_tables(entries) == merges, heading
    entries = long_document(repeat_header=True)
    entries[1]["status"] = "failed"  # a failed page between: nothing to join across
    assert merge_tables(entries) == 0
