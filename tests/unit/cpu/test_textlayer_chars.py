"""Characters of a text layer put right before they become lines: dot leaders dropped, loose accents attached."""

from __future__ import annotations

from services.worker.engines.cpu.model import Box
from services.worker.engines.cpu.textlayer import _Char, _make_line, attach_accents, drop_leaders


def _char(text: str, x: float, order: int) -> _Char:
    return _Char(text, Box(x, 0, x + 4, 10), 10.0, (False, False, False, False, ""), False, order)


def test_dot_leaders_are_dropped_and_leave_a_gap() -> None:
    label = [_char(c, 10 + 5 * i, i) for i, c in enumerate("Angola")]
    leader = [_char(".", 2 + 3 * i, 10 + i) for i in range(12)]  # drawn under the label, in content order after it
    figure = [_char(c, 120 + 5 * i, 30 + i) for i, c in enumerate("15421")]
    kept = drop_leaders(label + leader + figure)
    assert "".join(c.text for c in kept) == "Angola15421"
    assert kept[6].space_before
    ellipsis = [_char(c, 5 * i, i) for i, c in enumerate("and so on...")]
    assert "".join(c.text for c in drop_leaders(ellipsis)) == "and so on..."


def _accent(text: str, x: float, order: int) -> _Char:
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
