"""Shapes a vector chart is drawn with, read from a page's path objects: filled rectangles (bars, legend keys)
and open runs of straight strokes (a line chart's series, a legend's key line), each with its colour.

Points are taken through the path object's own matrix; a path inside a form XObject whose points do not land in
its page-space bounds (the form's matrix is not applied here) is left out rather than misplaced."""

from __future__ import annotations

import ctypes
from collections.abc import Callable

import pypdfium2.raw as pdfium_c

from services.worker.engines.cpu.model import Box, Shape

# pt: a filled rectangle at least this wide and high may be a bar (thinner ones are rules).
BAR_MIN_SIDE = 2.5
# pt: a path's points may stray this far out of its bounds (stroke width) and still be trusted.
POINT_SLACK = 3.0
# A polyline with more segments than this is a drawing (a map outline, a glyph), not a data series.
MAX_LINE_POINTS = 400


def shape_of(obj: object, box: Box, point: Callable[[float, float], tuple[float, float]]) -> Shape | None:
    """The chart shape a path object draws (`box`: its page-space bounds), or None."""
    count = pdfium_c.FPDFPath_CountSegments(obj)
    if count < 2 or count > MAX_LINE_POINTS:
        return None
    fill_mode, stroke = ctypes.c_int(0), ctypes.c_int(0)
    if not pdfium_c.FPDFPath_GetDrawMode(obj, fill_mode, stroke):
        return None
    matrix = pdfium_c.FS_MATRIX()
    if not pdfium_c.FPDFPageObj_GetMatrix(obj, matrix):
        return None
    points: list[tuple[float, float]] = []
    closed = False
    x, y = ctypes.c_float(), ctypes.c_float()
    for index in range(count):
        segment = pdfium_c.FPDFPath_GetPathSegment(obj, index)
        kind = pdfium_c.FPDFPathSegment_GetType(segment)
        if kind == pdfium_c.FPDF_SEGMENT_BEZIERTO:
            return None  # curves: pies, glyphs, rounded shapes
        if kind == pdfium_c.FPDF_SEGMENT_MOVETO and points:
            return None  # several subpaths: a hatched area, not one bar or one series
        pdfium_c.FPDFPathSegment_GetPoint(segment, x, y)
        closed = closed or bool(pdfium_c.FPDFPathSegment_GetClose(segment))
        px = matrix.a * x.value + matrix.c * y.value + matrix.e
        py = matrix.b * x.value + matrix.d * y.value + matrix.f
        points.append(point(px, py))
    if not all(box.x0 - POINT_SLACK <= px <= box.x1 + POINT_SLACK and box.y0 - POINT_SLACK <= py <= box.y1
               + POINT_SLACK for px, py in points):
        return None
    r, g, b, a = ctypes.c_uint(), ctypes.c_uint(), ctypes.c_uint(), ctypes.c_uint()
    if fill_mode.value and min(box.width, box.height) >= BAR_MIN_SIDE and _is_box(points):
        pdfium_c.FPDFPageObj_GetFillColor(obj, r, g, b, a)
        return Shape("bar", box, (r.value, g.value, b.value))
    if stroke.value and not fill_mode.value and not closed and not _is_box(points):
        pdfium_c.FPDFPageObj_GetStrokeColor(obj, r, g, b, a)
        return Shape("line", box, (r.value, g.value, b.value), points)
    return None


def _is_box(points: list[tuple[float, float]]) -> bool:
    """Four or five corners of an axis-aligned rectangle (the fifth closing it)."""
    if len(points) not in (4, 5):
        return False
    xs = sorted({round(px, 1) for px, _ in points})
    ys = sorted({round(py, 1) for _, py in points})
    return len(xs) == 2 and len(ys) == 2
