"""The chart reader's small parts: tick labels read as numbers, and which polylines are data series."""

from __future__ import annotations

from services.worker.engines.cpu.charts import Chart, _run, find_charts, number
from services.worker.engines.cpu.model import Box, Line, PageText, Shape, Word


def test_tick_labels_are_numbers_and_words_are_not() -> None:
    assert [number(t) for t in ["1,200", "-5", "40%", "$3.5", "(2)", "0.050", "−10"]] == \
        [1200.0, -5.0, 40.0, 3.5, -2.0, 0.05, -10.0]
    assert [number(t) for t in ["Q1", "2004-05", "", "1.2.3", "abc"]] == [None] * 5


def test_an_axis_drawn_there_and_back_is_no_series() -> None:
    assert _run([(137, 139), (137, 323), (137, 139)]) == []  # an axis stroked down and up again
    assert _run([(10, 5), (20, 7)]) == []  # two points: a legend key, not a series
    assert _run([(30, 1), (20, 2), (10, 3), (10, 3)]) == [(10, 3), (20, 2), (30, 1)]  # drawn right to left


def _line(text: str, x0: float, y0: float) -> Line:
    box = Box(x0, y0, x0 + 6 * len(text), y0 + 9)
    return Line([Word(text, box)], box)


def test_bars_without_a_value_axis_are_not_read_as_a_chart() -> None:
    # Shaded cells of unequal heights on one baseline, with words under them but no numeric tick labels.
    bars = [Shape("bar", Box(100 + 40 * i, 300 - h, 130 + 40 * i, 300), (200, 200, 200))
            for i, h in enumerate([20, 35, 50])]
    page = PageText(width=612, height=792, lines=[_line(w, 100 + 40 * i, 304) for i, w in enumerate("abc")],
                    shapes=bars, chars=3)
    assert find_charts(page) == []
    ticks = [_line(str(v), 70, 300 - 20 * v - 4.5) for v in range(4)]  # 0..3 every 20 pt, centred on y
    page.lines += ticks
    (chart,) = find_charts(page)
    assert isinstance(chart, Chart) and chart.kind == "bar" and "<th>a</th><td>1</td>" in chart.html
