"""How legible the pixels OCR read are: the height of the read lines, the width of the page's ink edges, and the
two together, the line height in edge widths (how many distinguishable steps a line of text has).

A page scanned at 50 dpi and a blurred one fail OCR for one reason: a glyph spans too few sharp pixels. The
recogniser's own scores stay high on them (it reads a plausible word), so the pixels themselves are the signal.
An image page's lines are measured in its own pixels; a scan inside a PDF is rendered at the engine's resolution,
where its lines are tall again, so its edges are counted no narrower than one pixel of the scan itself.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from services.worker.engines.cpu import tuning
from services.worker.engines.cpu.model import Line


def line_height(lines: list[Line]) -> float:
    """Median height in pixels of the read lines' boxes (0 without lines): the size text is written at."""
    heights = sorted(line.box.height for line in lines if line.box.height > 0)
    return float(heights[len(heights) // 2]) if heights else 0.0


def edge_width(image: np.ndarray) -> float:
    """Width in pixels over which the page's ink edges rise from paper to ink (about 1 on a crisp rendering,
    the blur's spread on a soft one; 0 when the page has no contrast to measure).

    The steepest steps of the grey image, as a share of the paper-to-ink contrast, are the inverse of the
    edges' width: a crisp edge steps the whole contrast in one pixel, a soft one a fraction of it per pixel.
    """
    grey = _grey(image)
    if grey.size == 0:
        return 0.0
    levels = np.bincount(grey.ravel(), minlength=256)
    low = _percentile(levels, tuning.LEGIBILITY_INK_PERCENTILE)
    contrast = _percentile(levels, 100 - tuning.LEGIBILITY_INK_PERCENTILE) - low
    if contrast < tuning.LEGIBILITY_MIN_CONTRAST:
        return 0.0
    wide = grey.astype(np.int16)
    across = np.abs(np.diff(wide, axis=1))[:-1, :]
    down = np.abs(np.diff(wide, axis=0))[:, :-1]
    steps = np.bincount(np.maximum(across, down).ravel(), minlength=256)
    steps[: int(tuning.LEGIBILITY_EDGE_SHARE * contrast) + 1] = 0  # not part of an edge
    if not steps.any():
        return 0.0
    steepest = _percentile(steps, tuning.LEGIBILITY_STEEP_PERCENTILE)
    return round(contrast / max(steepest, 1), 3)


def _percentile(counts: np.ndarray, percent: float) -> int:
    """The value under which `percent` of a histogram's counts lie (values are the histogram's indices)."""
    cumulative = np.cumsum(counts)
    return int(np.searchsorted(cumulative, cumulative[-1] * percent / 100))


def lines_in_edges(height: float, width: float) -> float:
    """The line height in edge widths: how many sharp steps a line of text spans (0 when either is unknown)."""
    return round(height / width, 2) if height > 0 and width > 0 else 0.0


def legibility_signals(image: np.ndarray, lines: list[Line], upsampled: float = 1.0) -> dict[str, float]:
    """The page's legibility signals: `ocr_line_height_px`, `edge_width_px` and their ratio `ocr_line_steps`.

    `upsampled` is how many rendered pixels one pixel of the scanned image spans (a 50-dpi scan rendered at 200
    dpi: 4): an edge is never narrower than one of the scan's own pixels, however the renderer smooths it."""
    height = line_height(lines)
    width = edge_width(image)
    signals = {"ocr_line_height_px": round(height, 1), "edge_width_px": width,
               "ocr_line_steps": lines_in_edges(height, max(width, upsampled) if width else 0.0)}
    if upsampled > 1.0:
        signals["scan_upsampled"] = round(upsampled, 3)
    return signals


def scan_density(pdf_bytes: bytes) -> float:
    """Pixels per point of the largest image on a one-page PDF (a scan's resolution / 72; 0 without images)."""
    pdf = pdfium.PdfDocument(pdf_bytes)
    try:
        page = pdf[0]
        best_area, density = 0.0, 0.0
        left, bottom, right, top = ctypes.c_float(), ctypes.c_float(), ctypes.c_float(), ctypes.c_float()
        width, height = ctypes.c_uint(), ctypes.c_uint()
        for index in range(pdfium_c.FPDFPage_CountObjects(page.raw)):
            obj = pdfium_c.FPDFPage_GetObject(page.raw, index)
            if (pdfium_c.FPDFPageObj_GetType(obj) != pdfium_c.FPDF_PAGEOBJ_IMAGE
                    or not pdfium_c.FPDFPageObj_GetBounds(obj, left, bottom, right, top)
                    or not pdfium_c.FPDFImageObj_GetImagePixelSize(obj, width, height)):
                continue
            drawn = sorted((right.value - left.value, top.value - bottom.value))
            area = drawn[0] * drawn[1]
            if area > best_area and drawn[1] > 0:
                best_area, density = area, max(width.value, height.value) / drawn[1]
        return density
    finally:
        pdf.close()


def _grey(image: np.ndarray) -> np.ndarray:
    pixels = np.asarray(image)
    if pixels.ndim == 3:
        pixels = pixels[..., :3].mean(axis=2)
    return np.asarray(pixels, dtype=np.uint8)
