"""Characters of a text layer put right before they become lines: dot leaders dropped, loose accents attached, and
characters of two lines never run into one."""

from __future__ import annotations

from services.worker.engines.cpu.model import Box
from services.worker.engines.cpu.textchars import Char, attach_accents, drop_leaders
from services.worker.engines.cpu.textlayer import read_page
from services.worker.engines.cpu.textlines import _make_line
from tests.pdfs import placed_text_pdf


def _char(text: str, x: float, order: int) -> Char:
    return Char(text, Box(x, 0, x + 4, 10), 10.0, (False, False, False, False, ""), False, order)


def test_dot_leaders_are_dropped_and_leave_a_gap() -> None:
    label = [_char(c, 10 + 5 * i, i) for i, c in enumerate("Angola")]
    leader = [_char(".", 2 + 3 * i, 10 + i) for i in range(12)]  # drawn under the label, in content order after it
    figure = [_char(c, 120 + 5 * i, 30 + i) for i, c in enumerate("15421")]
    kept = drop_leaders(label + leader + figure)
    assert "".join(c.text for c in kept) == "Angola15421"
    assert kept[6].space_before
    ellipsis = [_char(c, 5 * i, i) for i, c in enumerate("and so on...")]
    assert "".join(c.text for c in drop_leaders(ellipsis)) == "and so on..."


def _accent(text: str, x: float, order: int) -> Char:
    accent = _char(text, x, order)
    accent.box = Box(x, 0, x + 3, 10)
    return accent


def test_an_accent_set_apart_from_its_letter_is_put_back_on_it() -> None:
    # "Ján Mináč" as TeX sets it: each acute right after its letter in content order, the caron at the end of the
    # line, and the spaces pdfium reports around the displaced accents.
    letters = [_char(c, x, order) for c, x, order in
               [("J", 0, 0), ("a", 4, 1), ("n", 8, 3), ("M", 20, 4), ("i", 24, 5), ("n", 28, 6), ("a", 32, 7),
                ("c", 36, 9)]]
    letters[2].space_before = letters[3].space_before = letters[7].space_before = True
    chars = letters[:2] + [_accent("´", 4.5, 2)] + letters[2:7] + [_accent("´", 32.5, 8)] + letters[7:]
    chars.append(_accent("ˇ", 36.5, 40))
    line = _make_line(attach_accents(chars))
    assert line is not None and line.text == "Ján Mináč"
    assert attach_accents([_char("´", 100, 0)])[0].text == "´"  # an accent over no letter stays as it is


def test_the_second_line_of_a_cell_does_not_run_into_the_cell_beside_it() -> None:
    # A table row as LibreOffice lays out an HTML table in Liberation Serif: the first cell has a name over a
    # smaller note (<br><small>), the second cell's one line is centred beside them, half a line lower than the
    # name, and comes after the note in content order, a cell padding to its right.
    page = read_page(placed_text_pdf([("Aythya", 58, 582, 12), ("(Diving ducks)", 58, 570, 10),
                                      ("Hawser, Common Pochard", 129, 576, 12)]))
    assert sorted(line.text for line in page.lines) == ["(Diving ducks)", "Aythya", "Hawser, Common Pochard"]
    # Two cells of one size, one line of the first beside the two lines of the second, half a line apart.
    page = read_page(placed_text_pdf([("White-headed duck", 58, 300, 12), ("A small diving duck", 160, 307, 12),
                                      ("long.", 160, 293, 12)]))
    assert not any("A" in line.text and "long" in line.text for line in page.lines), [line.text for line in page.lines]


def test_a_superscript_and_a_subscript_stay_on_their_line() -> None:
    page = read_page(placed_text_pdf([("the area is 4 m", 72, 700, 12), ("2", 159, 705, 7), (" and H", 163, 700, 12),
                                      ("2", 203, 697, 7), ("O flows", 207, 700, 12)]))
    assert len(page.lines) == 1, [line.text for line in page.lines]
