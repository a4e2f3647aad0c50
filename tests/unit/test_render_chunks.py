"""chunks.json: split at headings, the token limit held, elements never cut, big tables split between rows
with their header repeated, every element in exactly one chunk and in order."""

from __future__ import annotations

from typing import Any

from services.core.elements import FURNITURE, Element, ElementType
from services.results.render.chunks import encoding, render_chunks
from services.results.render.derive import RenderPage, markdown_elements
from services.results.render.sanitize import parse_table


def check_invariants(pages: list[RenderPage], result: dict[str, Any]) -> None:
    """The promises of chunks.json, checked on any document."""
    enc = encoding(result["tokenizer"])
    limit = result["max_tokens"]
    expected = [e for p in pages for e in p.elements if e.type not in FURNITURE and (e.markdown or e.text).strip()]
    by_id = {e.id: e for e in expected}
    seen: list[str] = []
    for n, chunk in enumerate(result["chunks"]):
        assert chunk["index"] == n and chunk["element_ids"], chunk
        assert chunk["tokens"] == len(enc.encode(chunk["text"])), "the token count is the tokenizer's"
        if chunk["tokens"] > limit:  # over the limit only as a single element (or one row group of a table)
            assert len(chunk["element_ids"]) == 1, chunk
        assert chunk["pages"] == sorted({by_id[i].page for i in chunk["element_ids"]})
        assert [b["element_id"] for b in chunk["boxes"]] == chunk["element_ids"]
        if "table_part" in chunk:
            (table_id,) = chunk["element_ids"]
            assert by_id[table_id].type is ElementType.TABLE
            if chunk["table_part"]["index"] > 0:
                assert seen[-1] == table_id, "the parts of a table follow each other"
                continue
        seen.extend(chunk["element_ids"])
    assert seen == [e.id for e in expected], "every element in exactly one chunk, in reading order"
    # A split table's parts hold its body rows exactly once, in order, each part with the header rows.
    for element in expected:
        parts = [c for c in result["chunks"] if c["element_ids"] == [element.id] and "table_part" in c]
        if not parts:
            continue
        table = parse_table(element.html or element.markdown)
        rows: list[str] = []
        for part in parts:
            piece = parse_table(part["text"])
            header = [[c.text for c in r] for r in piece.rows[:piece.header_rows]]
            assert header == [[c.text for c in r] for r in table.rows[:table.header_rows]]
            rows += [" | ".join(c.text for c in r) for r in piece.rows[piece.header_rows:]]
        assert rows == [" | ".join(c.text for c in r) for r in table.rows[table.header_rows:]]


def page(markdown: str, number: int = 1) -> RenderPage:
    return RenderPage(number=number, status="succeeded", elements=markdown_elements(markdown, number))


def big_table(rows: int, *, rowspan_at: int | None = None) -> str:
    body = []
    for r in range(rows):
        first = f'<td rowspan="3">group {r}</td>' if r == rowspan_at else ("" if rowspan_at is not None and
                                                                           rowspan_at < r < rowspan_at + 3 else
                                                                           f"<td>row {r}</td>")
        body.append(f"<tr>{first}<td>value number {r} with several words in it</td></tr>")
    return f"<table><thead><tr><th>name</th><th>value</th></tr></thead><tbody>{''.join(body)}</tbody></table>"


def test_headings_start_chunks_and_carry_their_path() -> None:
    pages = [page("# Report\n\nIntro.\n\n## Costs\n\nWe spent.\n\n### Travel\n\nTrains.\n\n## Income\n\nSales."),
             page("More sales on page two.", 2)]
    result = render_chunks(pages, max_tokens=512)
    check_invariants(pages, result)
    assert [c["heading_path"] for c in result["chunks"]] == [
        ["Report"], ["Report", "Costs"], ["Report", "Costs", "Travel"], ["Report", "Income"]]
    assert result["chunks"][-1]["pages"] == [1, 2]  # a section running onto the next page
    assert result["chunks"][0]["boxes"] == [{"element_id": "p1-e1", "page": 1, "bbox": None},
                                            {"element_id": "p1-e2", "page": 1, "bbox": None}]


def test_limit_held_and_an_oversized_element_is_alone_and_whole() -> None:
    paragraphs = [" ".join(f"word{i}x{j}" for j in range(30)) for i in range(12)]
    huge = " ".join(f"long{j}" for j in range(400))
    pages = [page("\n\n".join(paragraphs[:6] + [huge] + paragraphs[6:]))]
    result = render_chunks(pages, max_tokens=128)
    check_invariants(pages, result)
    over = [c for c in result["chunks"] if c["tokens"] > 128]
    assert len(over) == 1 and over[0]["text"] == huge
    assert len(result["chunks"]) > 4


def test_big_table_split_between_rows_with_the_header_repeated() -> None:
    pages = [page("## Data\n\nBefore.\n\n" + big_table(60) + "\n\nAfter.")]
    result = render_chunks(pages, max_tokens=200)
    check_invariants(pages, result)
    parts = [c for c in result["chunks"] if "table_part" in c]
    assert len(parts) > 2 and all(c["tokens"] <= 200 for c in parts)
    assert all(c["text"].startswith("<table><thead><tr><th>name</th><th>value</th></tr></thead>") for c in parts)
    assert all(c["heading_path"] == ["Data"] for c in parts)
    assert [c["table_part"]["index"] for c in parts] == list(range(len(parts)))


def test_a_rowspan_group_is_never_parted_and_tables_can_stay_whole() -> None:
    pages = [page(big_table(40, rowspan_at=10))]
    result = render_chunks(pages, max_tokens=100)
    check_invariants(pages, result)
    holding = [c for c in result["chunks"] if "group 10" in c["text"]]
    assert len(holding) == 1 and all(f"value number {r} " in holding[0]["text"] for r in (10, 11, 12))
    whole = render_chunks(pages, max_tokens=100, split_tables=False)
    check_invariants(pages, whole)
    assert len(whole["chunks"]) == 1 and whole["chunks"][0]["tokens"] > 100


def test_furniture_is_left_out() -> None:
    elements = [Element(id="p1-e1", type=ElementType.PAGE_HEADER, page=1, bbox=(0, 0, 10, 10), text="ACME",
                        markdown="ACME"),
                Element(id="p1-e2", type=ElementType.PARAGRAPH, page=1, bbox=(10, 20, 300, 40), text="Body.",
                        markdown="Body.")]
    pages = [RenderPage(number=1, status="succeeded", elements=elements, width=612, height=792)]
    result = render_chunks(pages)
    check_invariants(pages, result)
    assert result["chunks"][0]["element_ids"] == ["p1-e2"]
    assert result["chunks"][0]["boxes"][0]["bbox"] == [10, 20, 300, 40]


def test_a_chunk_carries_its_weakest_and_mean_block_confidence() -> None:
    elements = markdown_elements("# Intro\n\nA sure paragraph.\n\nA doubtful paragraph.\n\n# Next\n\nNothing rated.", 1)
    rated = [e.model_copy(update={"confidence": c}) for e, c in zip(elements, [0.9, 0.95, 0.41, None, None],
                                                                      strict=True)]
    first, second = render_chunks([RenderPage(number=1, status="succeeded", elements=rated)])["chunks"]
    assert (first["confidence_min"], first["confidence_mean"]) == (0.41, 0.7533)
    assert "confidence_min" not in second and "confidence_mean" not in second  # no element of it was rated
