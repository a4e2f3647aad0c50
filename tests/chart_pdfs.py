"""Test PDFs of vector charts with known values, written as PDF path operators (no plotting library): a bar
chart (series by colour, a legend, gridlines, a numeric axis with its tick labels) and a line chart."""

from __future__ import annotations

from tests.pdfs import _ONE_PAGE_TREE, _raw_pdf

PALETTE = [(0.2, 0.4, 0.8), (0.9, 0.5, 0.1), (0.3, 0.7, 0.3)]
# The plot: its left edge, its baseline (PDF user space, bottom-left origin) and its height at the axis' top.
LEFT, BASE, HEIGHT, WIDTH = 110.0, 360.0, 220.0, 360.0


def _text(text: str, x: float, y: float, size: float = 9.0) -> str:
    escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    return f"BT /F1 {size} Tf {x:.2f} {y:.2f} Td ({escaped}) Tj ET\n"


def _width(text: str, size: float) -> float:
    return 0.556 * size * len(text)  # Helvetica's digits (and near enough its lower case) are 0.556 em


def _page(body: str) -> bytes:
    stream = body.encode()
    return _raw_pdf([*_ONE_PAGE_TREE,
                     b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
                     b"/Resources << /Font << /F1 5 0 R >> >> >>",
                     b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream",
                     b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"])


def _axis(top: float, step: float, decimals: int = 0) -> str:
    """Gridlines and right-aligned tick labels from 0 to `top` every `step`, and the two axes."""
    out = "0.5 w 0.75 G\n"
    value = 0.0
    while value <= top + 1e-9:
        y = BASE + HEIGHT * value / top
        out += f"{LEFT} {y:.2f} m {LEFT + WIDTH} {y:.2f} l S\n"
        label = f"{value:.{decimals}f}"
        out += _text(label, LEFT - 6 - _width(label, 8), y - 3, 8)
        value += step
    out += f"1 w 0 G {LEFT} {BASE} m {LEFT + WIDTH} {BASE} l S {LEFT} {BASE} m {LEFT} {BASE + HEIGHT} l S\n"
    return out


def _prose() -> str:
    out = _text("Quarterly results", 72, 720, 16)
    for n, line in enumerate(["Revenue grew in every quarter of the year while costs stayed flat, as the chart",
                              "below shows for each of the company's three divisions and in total."]):
        out += _text(line, 72, 690 - 14 * n, 10)
    return out + _text("Figure 1: Revenue by quarter and division (million EUR)", 72, 320, 9)


def bar_chart_pdf(categories: list[str], series: dict[str, list[float]], top: float, step: float) -> bytes:
    """A grouped vertical bar chart: one bar per series in each category, its value read on a 0..`top` axis."""
    out = _prose() + _axis(top, step)
    slot = WIDTH / len(categories)
    bar = slot * 0.7 / len(series)
    for c, name in enumerate(categories):
        start = LEFT + c * slot + slot * 0.15
        for s, values in enumerate(series.values()):
            r, g, b = PALETTE[s]
            height = HEIGHT * values[c] / top
            out += f"{r} {g} {b} rg {start + s * bar:.2f} {BASE} {bar:.2f} {height:.2f} re f\n"
        out += "0 g " + _text(name, start + slot * 0.35 - _width(name, 9) / 2, BASE - 14)
    for s, name in enumerate(series):
        r, g, b = PALETTE[s]
        x = LEFT + WIDTH + 14
        y = BASE + HEIGHT - 14 * s
        out += f"{r} {g} {b} rg {x} {y} 8 8 re f 0 g " + _text(name, x + 12, y)
    return _page(out)


def line_chart_pdf(labels: list[str], series: dict[str, list[float]], top: float, step: float) -> bytes:
    """A line chart: each series a polyline over the labelled x positions, on a 0..`top` axis."""
    out = _prose() + _axis(top, step, decimals=1)
    gap = WIDTH / (len(labels) - 1)
    for i, label in enumerate(labels):
        out += "0 g " + _text(label, LEFT + i * gap - _width(label, 9) / 2, BASE - 14)
    for s, (name, values) in enumerate(series.items()):
        r, g, b = PALETTE[s]
        points = " ".join(f"{LEFT + i * gap:.2f} {BASE + HEIGHT * v / top:.2f} {'m' if i == 0 else 'l'}"
                          for i, v in enumerate(values))
        out += f"1.5 w {r} {g} {b} RG {points} S\n"
        x, y = LEFT + WIDTH + 14, BASE + HEIGHT - 14 * s
        out += f"{r} {g} {b} RG {x} {y + 3} m {x + 14} {y + 3} l S 0 g " + _text(name, x + 18, y)
    return _page(out)


def ruled_table_pdf(rows: list[list[str]]) -> bytes:
    """An ordinary ruled table (every cell drawn, the header row shaded): a table, never a chart."""
    out = _prose()
    cell_w, cell_h, x0, top = 90.0, 18.0, 72.0, 600.0
    out += f"0.9 g {x0} {top - cell_h} {cell_w * len(rows[0])} {cell_h} re f 0 g 0.5 w 0 G\n"
    for r in range(len(rows) + 1):
        out += f"{x0} {top - r * cell_h} m {x0 + cell_w * len(rows[0])} {top - r * cell_h} l S\n"
    for c in range(len(rows[0]) + 1):
        out += f"{x0 + c * cell_w} {top} m {x0 + c * cell_w} {top - cell_h * len(rows)} l S\n"
    for r, row in enumerate(rows):
        for c, cell in enumerate(row):
            out += _text(cell, x0 + c * cell_w + 4, top - (r + 1) * cell_h + 5)
    return _page(out)
