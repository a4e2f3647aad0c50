"""A model's answer split into blocks and aligned to the page's words: boxes from words, never made up."""

from __future__ import annotations

from services.core.elements import ElementType, page_markdown
from services.worker.engines.base import PageWord
from services.worker.engines.vllm.align import align
from services.worker.engines.vllm.answer_blocks import split_answer

ANSWER = """# Annual Report

Revenue grew strongly
in the second half.

- first point
- second point

| Year | Sales |
|------|-------|
| 2004 | 34.7 |

$$
E = mc^2
$$

```
print(42)
```

![a chart](fig.png)

Table 1: Sales by year"""


def test_every_line_lands_in_one_typed_block() -> None:
    blocks = split_answer(ANSWER)
    assert [b.type for b in blocks] == [ElementType.TITLE, ElementType.PARAGRAPH, ElementType.LIST,
                                        ElementType.TABLE, ElementType.FORMULA, ElementType.CODE,
                                        ElementType.FIGURE, ElementType.CAPTION]
    assert page_markdown(blocks) == ANSWER
    title, paragraph, bullets, table, formula, code, figure, _ = blocks
    assert title.level == 1 and title.text == "Annual Report"
    assert paragraph.text == "Revenue grew strongly\nin the second half."
    assert bullets.items == ["first point", "second point"] and bullets.ordered is False
    assert table.html == ("<table><thead><tr><th>Year</th><th>Sales</th></tr></thead>"
                          "<tbody><tr><td>2004</td><td>34.7</td></tr></tbody></table>")
    assert formula.latex == "E = mc^2" and code.text == "print(42)" and figure.text == "a chart"
    assert all(b.bbox is None for b in blocks)


def test_html_tables_and_lists_of_two_kinds() -> None:
    blocks = split_answer("<table>\n<tr><td>a &amp; b</td></tr>\n</table>\n1. one\n2. two\n- other", page=3)
    assert [b.type for b in blocks] == [ElementType.TABLE, ElementType.LIST, ElementType.LIST]
    assert blocks[0].text == "a & b" and blocks[1].ordered is True and blocks[2].items == ["other"]
    assert [b.id for b in blocks] == ["p3-e1", "p3-e2", "p3-e3"]


def words(text: str, y: float, x: float = 50.0) -> list[PageWord]:
    out = []
    for token in text.split():
        out.append(PageWord(token, (x, y, x + 6 * len(token), y + 10)))
        x += 6 * len(token) + 4
    return out


def test_blocks_take_the_box_of_the_words_they_match() -> None:
    page = (words("Annual Report", 40) + words("Revenue grew strongly", 80) + words("in the second half.", 92)
            + words("Page 7", 760))
    blocks = align(split_answer("# Annual Report\n\nRevenue grew strongly in the second half."), page)
    assert blocks[0].bbox == (50, 40, 126, 50) and blocks[0].alignment == 1.0
    assert blocks[1].bbox == (50, 80, 172, 102) and blocks[1].alignment == 1.0


def test_a_block_matching_nothing_has_no_box_and_repeats_go_in_reading_order() -> None:
    page = words("Total 10", 100) + words("Total 20", 300)
    blocks = align(split_answer("Total 10\n\nsomething the model invented\n\nTotal 20"), page)
    assert blocks[0].bbox is not None and blocks[0].bbox[1] == 100
    assert blocks[1].bbox is None and blocks[1].alignment == 0.0
    assert blocks[2].bbox is not None and blocks[2].bbox[1] == 300  # not the first "Total" again


def test_a_block_that_barely_matches_gets_no_box() -> None:
    page = words("the quick brown fox jumps over the lazy dog", 100)
    [block] = align(split_answer("completely different words about the weather and nothing else at all"), page)
    assert block.bbox is None and block.alignment is not None and block.alignment < 0.3


def test_text_starting_with_dollars_is_not_a_formula_swallowing_the_page() -> None:
    blocks = split_answer("$$x$$ costs more\n\nnext paragraph\n\n$$\na+b\n$$")
    assert [b.type for b in blocks] == [ElementType.PARAGRAPH, ElementType.PARAGRAPH, ElementType.FORMULA]
    assert blocks[2].latex == "a+b"


def test_unspaced_scripts_match_character_by_character() -> None:
    # The text layer cut the line in two runs; the model wrote it as one.
    page = [PageWord("東京都に", (50, 100, 90, 110)), PageWord("住む人々", (90, 100, 130, 110))]
    [block] = align(split_answer("東京都に住む人々"), page)
    assert block.bbox == (50, 100, 130, 110) and block.alignment == 1.0
