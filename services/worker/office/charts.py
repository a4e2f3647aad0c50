"""Charts of OOXML documents read from their chart parts: kind, title, and the data as a table.

A rendered chart is a picture (its numbers are bars, not text); the chart part holds the series exactly.
The guard has already refused any part that declares entities, and ElementTree resolves no external ones.
"""

from __future__ import annotations

import html
import io
import re
import zipfile
from dataclasses import dataclass
from typing import Any
from xml.etree import ElementTree

_CHART_PART = re.compile(r"^(?:word|ppt|xl)/charts/chart\d+\.xml$")
_C = "{http://schemas.openxmlformats.org/drawingml/2006/chart}"
_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
MAX_CHART_BYTES = 8 << 20


@dataclass(frozen=True, slots=True)
class Chart:
    kind: str  # "line", "bar", "scatter", …
    title: str
    header: list[str]
    rows: list[list[str]]

    @property
    def html(self) -> str:
        head = "".join(f"<th>{html.escape(cell)}</th>" for cell in self.header)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>"
                       for row in self.rows)
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

    @property
    def markdown(self) -> str:
        label = f"{self.kind.capitalize()} chart" + (f": {self.title}" if self.title else "")
        return f"**{label}**\n\n{self.html}"

    def as_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "title": self.title, "header": self.header, "rows": self.rows,
                "markdown": self.markdown}


def _points(element: ElementTree.Element | None) -> list[str]:
    if element is None:
        return []
    points = sorted((int(pt.get("idx", "0")), (pt.findtext(f"{_C}v") or "")) for pt in element.iter(f"{_C}pt"))
    return [value for _, value in points]


def read_charts(data: bytes) -> list[Chart]:
    charts: list[Chart] = []
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError):
        return charts
    with archive:
        names = sorted((i for i in archive.infolist() if _CHART_PART.match(i.filename)
                        and i.file_size <= MAX_CHART_BYTES), key=lambda i: i.filename)
        for info in names:
            try:
                root = ElementTree.fromstring(archive.read(info))
            except (ElementTree.ParseError, zipfile.BadZipFile, OSError):
                continue
            chart = _chart(root)
            if chart is not None:
                charts.append(chart)
    return charts


def _chart(root: ElementTree.Element) -> Chart | None:
    plot = root.find(f".//{_C}plotArea")
    if plot is None:
        return None
    kinds = [child.tag.removeprefix(_C).removesuffix("Chart") for child in plot if child.tag.endswith("Chart")]
    title_element = root.find(f".//{_C}title")
    title = " ".join(t.text or "" for t in title_element.iter(f"{_A}t")).strip() if title_element is not None else ""
    categories: list[str] = []
    series: list[tuple[str, list[str]]] = []
    for ser in plot.iter(f"{_C}ser"):
        name_element = ser.find(f"{_C}tx")
        name = " ".join(v.text or "" for v in name_element.iter(f"{_C}v")).strip() if name_element is not None else ""
        cats = _points(ser.find(f"{_C}cat")) or _points(ser.find(f"{_C}xVal"))
        values = _points(ser.find(f"{_C}val")) or _points(ser.find(f"{_C}yVal"))
        categories = categories or cats
        series.append((name or f"series {len(series) + 1}", values))
    if not series:
        return None
    length = max(len(categories), *(len(values) for _, values in series))
    rows = [[categories[i] if i < len(categories) else str(i + 1)]
            + [values[i] if i < len(values) else "" for _, values in series] for i in range(length)]
    return Chart(kind=kinds[0] if kinds else "chart", title=title, header=["", *[n for n, _ in series]], rows=rows)
