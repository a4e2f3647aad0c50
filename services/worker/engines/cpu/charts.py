"""Vector charts on a text-layer page: bars and polylines read against a labelled numeric axis.

A bar chart is two bars or more standing on one baseline (or hanging from it) with unequal lengths; a line chart
is an open polyline of three points or more. Either is read against its value axis: three numeric tick labels
or more, stacked at the left of the plot, whose positions fit a straight line (value = a·y + b). Each bar's free
end, or each point, is read through that fit; the categories are the labels under the bars or points, the series
the legend's text beside a key of the same colour. The chart becomes a figure element (`chart`: bar or line),
its text (ticks, labels, legend) kept, and its values a data table marked `derived`: read from the drawing, not
printed on the page. The chart's text and its rules (axes, gridlines) are taken out of the page's flow, so a
drawn chart is never an empty lattice table. Without a readable axis, bars still make a chart, without a table.
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass, field

from services.worker.engines.cpu.model import Box, Line, PageText, Segment, Shape, union_all

_NUMBER = re.compile(r"^[-−–]?[$€£]?\(?[-−–]?\d{1,3}(?:[,\s]?\d{3})*(?:\.\d+)?\)?\s*%?$")
# pt: bars whose base edges are this close stand on one baseline.
BASELINE_SLACK = 1.0
# A tick fit whose points stray more than this share of the axis' span from the line is no axis.
TICK_FIT_SLACK = 0.02
# pt: tick labels end at most this far left of the plot (and their right edges align within TICK_ALIGN).
TICK_REACH = 60.0
TICK_ALIGN = 4.0
# pt: category labels start at most this far under the baseline.
LABEL_REACH = 24.0
# pt: a legend key is at most this big, its text starts at most LEGEND_GAP after it.
LEGEND_KEY_MAX = 16.0
LEGEND_GAP = 12.0
LEGEND_REACH = 0.35
MIN_TICKS = 3
# Polylines: more series than this on one page is a drawing, not a line chart.
MAX_SERIES = 8
# Plot heights: tick labels are looked for this far above and below the drawn data.
TICK_SPAN = 0.6


@dataclass(slots=True)
class Chart:
    """A chart found on the page: its box, the text lines drawn in it, and its data table (empty: none read)."""

    kind: str
    box: Box
    lines: list[Line] = field(default_factory=list)
    html: str = ""

    @property
    def text(self) -> str:
        return "\n".join(line.text for line in sorted(self.lines, key=lambda ln: (ln.box.y0, ln.box.x0)))


def number(text: str) -> float | None:
    """A tick label's value (`1,200`, `-5`, `40%`, `$3.5`, `(2)` as -2), or None."""
    raw = text.strip()
    if not _NUMBER.match(raw):
        return None
    negative = raw.startswith(("-", "−", "–", "(")) or "(-" in raw
    digits = re.sub(r"[^\d.]", "", raw)
    try:
        value = float(digits)
    except ValueError:
        return None
    return -value if negative else value


def find_charts(text: PageText) -> list[Chart]:
    """The page's bar and line charts, each with the text lines inside it."""
    charts: list[Chart] = []
    bars = [s for s in text.shapes if s.kind == "bar"]
    for group in _bar_groups(bars):
        chart = _bar_chart(group, text, bars)
        if chart is not None and not any(_overlaps(chart.box, c.box) for c in charts):
            charts.append(chart)
    series = [Shape(s.kind, s.box, s.color, points) for s in text.shapes if s.kind == "line"
              and (points := _run(s.points)) and not any(c.box.contains_point(s.box.cx, s.box.cy) for c in charts)]
    if len(series) > MAX_SERIES:
        series = []  # a drawing of many strokes (a map, a diagram), not a few data series
    if series:
        chart = _line_chart(series, text)
        if chart is not None:
            charts.append(chart)
    return charts


def _run(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """A data series' points: three or more, left to right (an axis or tick drawn there and back is none)."""
    kept: list[tuple[float, float]] = []
    for point in points:
        if not kept or abs(point[0] - kept[-1][0]) > 0.5 or abs(point[1] - kept[-1][1]) > 0.5:
            kept.append(point)
    if len(kept) >= 2 and kept[0][0] > kept[-1][0]:
        kept.reverse()
    steps = [b[0] - a[0] for a, b in zip(kept, kept[1:], strict=False)]
    return kept if len(kept) >= 3 and all(step > 0.5 for step in steps) else []


def without_charts(text: PageText, charts: list[Chart]) -> PageText:
    """The page with the charts' text lines and rules (axes, gridlines) taken out of its flow."""
    taken = {id(line) for chart in charts for line in chart.lines}

    def inside(rule: Segment) -> bool:
        return any(c.box.contains_point((rule.x0 + rule.x1) / 2, (rule.y0 + rule.y1) / 2, pad=2.0) for c in charts)

    return PageText(width=text.width, height=text.height, lines=[ln for ln in text.lines if id(ln) not in taken],
                    rules=[r for r in text.rules if not inside(r)], margin_lines=text.margin_lines,
                    chars=text.chars, unmapped_chars=text.unmapped_chars, invisible_chars=text.invisible_chars,
                    image_coverage=text.image_coverage, images=text.images, shapes=text.shapes)


def _overlaps(a: Box, b: Box) -> bool:
    return a.x_overlap(b) > 0 and a.y_overlap(b) > 0


def _bar_groups(bars: list[Shape]) -> list[list[Shape]]:
    """Vertical bars sharing a baseline (their bottoms, or their tops for bars below zero), unequal in height."""
    groups: list[list[Shape]] = []
    for edge in ("y1", "y0"):
        buckets: dict[float, list[Shape]] = {}
        for bar in sorted(bars, key=lambda s: getattr(s.box, edge)):
            key = next((k for k in buckets if abs(k - getattr(bar.box, edge)) <= BASELINE_SLACK),
                       getattr(bar.box, edge))
            buckets.setdefault(key, []).append(bar)
        for members in buckets.values():
            members.sort(key=lambda s: s.box.x0)
            apart = all(a.box.x1 <= b.box.x0 + 0.5 for a, b in zip(members, members[1:], strict=False))
            heights = [s.box.height for s in members]
            if len(members) >= 2 and apart and max(heights) - min(heights) > 1.0:
                groups.append(members)
    return groups


def _ticks(text: PageText, left: float, top: float, bottom: float) -> list[tuple[Line, float]]:
    """Numeric labels right-aligned at the left of a plot (x < `left`) between `top` and `bottom`."""
    reach = TICK_SPAN * (bottom - top) + 8  # an axis runs past the data it plots
    found = [(line, value) for line in text.lines
             if left - TICK_REACH <= line.box.x1 <= left + 2 and top - reach <= line.box.cy <= bottom + reach
             and (value := number(line.text)) is not None]
    if not found:
        return []
    edge = max(line.box.x1 for line, _ in found)
    return [(line, value) for line, value in found if edge - line.box.x1 <= TICK_ALIGN]


def _fit(ticks: list[tuple[Line, float]]) -> tuple[float, float] | None:
    """value = a·y + b through the ticks (least squares), when they fit it and values rise upward."""
    if len(ticks) < MIN_TICKS:
        return None
    ys = [line.box.cy for line, _ in ticks]
    vs = [value for _, value in ticks]
    n = len(ys)
    my, mv = sum(ys) / n, sum(vs) / n
    var = sum((y - my) ** 2 for y in ys)
    if var <= 0:
        return None
    a = sum((y - my) * (v - mv) for y, v in zip(ys, vs, strict=True)) / var
    b = mv - a * my
    span = max(vs) - min(vs)
    if a >= 0 or span <= 0 or any(abs(a * y + b - v) > TICK_FIT_SLACK * span for y, v in zip(ys, vs, strict=True)):
        return None
    return a, b


def _decimals(ticks: list[tuple[Line, float]]) -> int:
    """Decimals to report: one more than the tick labels show (a bar is read to a tenth of a tick label's unit)."""
    shown = max((len(t.text.strip().rstrip("%)").split(".")[1]) if "." in t.text else 0) for t, _ in ticks)
    return shown + 1


def _legend(text: PageText, keys: list[Shape], plot: Box) -> dict[tuple[int, int, int], tuple[Line, Shape]]:
    """Series names by colour: a text line starting right after a small key (a square or a short line) near the
    plot (within LEGEND_REACH of its size)."""
    names: dict[tuple[int, int, int], tuple[Line, Shape]] = {}
    pad = LEGEND_REACH * max(plot.width, plot.height)
    for key in keys:
        if not plot.contains_point(key.box.cx, key.box.cy, pad=pad):
            continue
        if max(key.box.width, key.box.height) > (LEGEND_KEY_MAX if key.kind == "bar" else 3 * LEGEND_KEY_MAX):
            continue
        beside = [line for line in text.lines if 0 <= line.box.x0 - key.box.x1 <= LEGEND_GAP
                  and abs(line.box.cy - key.box.cy) <= max(3.0, line.box.height / 2)]
        if beside and key.color not in names:
            names[key.color] = (min(beside, key=lambda ln: ln.box.x0), key)
    return names


def _labels_under(text: PageText, plot: Box, taken: set[int]) -> list[Line]:
    return [line for line in text.lines if id(line) not in taken and plot.y1 - 2 <= line.box.y0 <= plot.y1
            + LABEL_REACH and plot.x0 - 20 <= line.box.cx <= plot.x1 + 20 and number(line.text) is None]


def _bar_chart(group: list[Shape], text: PageText, all_bars: list[Shape]) -> Chart | None:
    plot = union_all([s.box for s in group])
    hanging = all(abs(s.box.y0 - group[0].box.y0) <= BASELINE_SLACK for s in group)  # bars below zero
    ticks = _ticks(text, plot.x0, plot.y0, plot.y1)
    fit = _fit(ticks)
    legend = _legend(text, [s for s in text.shapes if s not in group and s.kind in ("bar", "line")], plot)
    taken = {id(line) for line, _ in ticks} | {id(line) for line, _ in legend.values()}
    labels = _labels_under(text, plot, taken)
    parts = [plot, *(line.box for line, _ in ticks), *(line.box for line in labels),
             *(line.box.union(key.box) for line, key in legend.values())]
    box = union_all(parts)
    inside = [line for line in text.lines if box.contains_point(line.box.cx, line.box.cy)]
    if fit is None:
        return None  # coloured boxes without a value axis: shaded cells of a table, a layout, not a chart read here
    if _stacked(group, all_bars):
        return Chart("bar", box, inside)  # no table: stacked segments are not read as bars of their own
    a, b = fit
    decimals = _decimals(ticks)
    categories = [(_label_over(labels, cluster, n), cluster) for n, cluster in enumerate(_clusters(group), 1)]
    colours = list(dict.fromkeys(bar.color for bar in group))
    series = [legend[c][0].text if c in legend else ("Value" if len(colours) == 1 else f"Series {i}")
              for i, c in enumerate(colours, 1)]
    rows = []
    for name, members in categories:
        values = {bar.color: a * (bar.box.y1 if hanging else bar.box.y0) + b for bar in members}
        rows.append([name, *(_format(values.get(c), decimals) for c in colours)])
    return Chart("bar", box, inside, _table(series, rows))


def _stacked(group: list[Shape], bars: list[Shape]) -> bool:
    """Does another bar sit on (or hang under) one of the group's, over the same span: stacked bars?"""
    return any(other not in group and abs(other.box.x0 - bar.box.x0) <= 1 and abs(other.box.x1 - bar.box.x1) <= 1
               and (abs(other.box.y1 - bar.box.y0) <= 1 or abs(other.box.y0 - bar.box.y1) <= 1)
               for bar in group for other in bars)


def _clusters(group: list[Shape]) -> list[list[Shape]]:
    """Bars side by side (of different colours, closer than half a bar's width) are one category; a chart of
    one colour has a category per bar."""
    if len({bar.color for bar in group}) == 1:
        return [[bar] for bar in group]
    widths = sorted(bar.box.width for bar in group)
    gap = 0.5 * widths[len(widths) // 2]
    clusters = [[group[0]]]
    for bar in group[1:]:
        if bar.box.x0 - clusters[-1][-1].box.x1 <= gap and bar.color not in {b.color for b in clusters[-1]}:
            clusters[-1].append(bar)
        else:
            clusters.append([bar])
    return clusters


def _label_over(labels: list[Line], members: list[Shape], n: int) -> str:
    """The label centred under a category's bars (the nearest whose centre is over them), else its number."""
    span = union_all([bar.box for bar in members])
    near = [line for line in labels if span.x0 - 8 <= line.box.cx <= span.x1 + 8]
    return min(near, key=lambda line: abs(line.box.cx - span.cx)).text if near else str(n)


def _line_chart(series_shapes: list[Shape], text: PageText) -> Chart | None:
    plot = union_all([s.box for s in series_shapes])
    ticks = _ticks(text, plot.x0, plot.y0, plot.y1)
    fit = _fit(ticks)
    if fit is None:
        return None  # polylines without an axis: a drawing, not a chart read here
    legend = _legend(text, [s for s in text.shapes if s not in series_shapes], plot)
    taken = {id(line) for line, _ in ticks} | {id(line) for line, _ in legend.values()}
    # The x axis: at the lowest tick (the value axis' foot), or the plot's bottom when that is lower.
    axis = max(plot.y1, *(line.box.cy for line, _ in ticks))
    labels = _words(_labels_under(text, Box(plot.x0, plot.y0, plot.x1, axis), taken))
    a, b = fit
    decimals = _decimals(ticks)
    xs = sorted({round(px, 1) for s in series_shapes for px, _ in s.points})
    columns: list[float] = []
    for x in xs:
        if not columns or x - columns[-1] > 2.0:
            columns.append(x)
    names: list[str] = []
    for x in columns:
        label = min(labels, key=lambda ln: abs(ln.box.cx - x), default=None)
        near = label is not None and abs(label.box.cx - x) <= max(8.0, label.box.width / 2 + 2)
        names.append(label.text if near and label is not None else f"{len(names) + 1}")
    header = [legend[s.color][0].text if s.color in legend else f"Series {i}"
              for i, s in enumerate(series_shapes, 1)]
    if len(series_shapes) == 1 and series_shapes[0].color not in legend:
        header = ["Value"]
    rows = []
    for x, name in zip(columns, names, strict=True):
        cells = []
        for shape in series_shapes:
            ys = [py for px, py in shape.points if abs(px - x) <= 2.0]
            cells.append(_format(a * ys[0] + b, decimals) if ys else "")
        rows.append([name, *cells])
    parts = [plot, *(line.box for line, _ in ticks), *(line.box for line in labels),
             *(line.box.union(key.box) for line, key in legend.values())]
    box = union_all(parts)
    inside = [line for line in text.lines if box.contains_point(line.box.cx, line.box.cy)]
    return Chart("line", box, inside, _table(header, rows))


def _words(lines: list[Line]) -> list[Line]:
    """Label lines with a wide gap between words ("Jan Feb Mar" set as one run) split into one line per word."""
    out: list[Line] = []
    for line in lines:
        gaps = [b.box.x0 - a.box.x1 for a, b in zip(line.words, line.words[1:], strict=False)]
        if gaps and min(gaps) > 0.6 * line.box.height:
            out.extend(Line([word], word.box) for word in line.words)
        else:
            out.append(line)
    return out


def _format(value: float | None, decimals: int) -> str:
    if value is None or math.isnan(value):
        return ""
    rounded = round(value, decimals)
    return f"{rounded:.{decimals}f}".rstrip("0").rstrip(".") if decimals else f"{rounded:.0f}"


def _table(series: list[str], rows: list[list[str]]) -> str:
    """The data table: a header row (an empty corner, then the series), a row per category."""
    head = "<tr><th></th>" + "".join(f"<th>{html.escape(name)}</th>" for name in series) + "</tr>"
    body = "".join("<tr>" + f"<th>{html.escape(row[0])}</th>" + "".join(f"<td>{html.escape(c)}</td>"
                                                                            for c in row[1:]) + "</tr>"
                   for row in rows)
    return f'<table data-derived="true"><thead>{head}</thead><tbody>{body}</tbody></table>'
