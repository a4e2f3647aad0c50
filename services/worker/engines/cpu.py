"""The embedded engine: the PDF's text layer when it has a usable one, RapidOCR on the pixels otherwise."""

from __future__ import annotations

import statistics
import threading
import unicodedata
from typing import Any

import numpy as np
from PIL import Image

from services.core.pdf import load_image, pdf_text_layer, render_pdf_page
from services.core.settings import Settings
from services.worker.engines.base import PageInput, PageOutput

_ocr_lock = threading.Lock()
_ocr: Any = None


def get_ocr() -> Any:
    """One RapidOCR per process: loading the models takes a second and ~100 MB."""
    global _ocr
    with _ocr_lock:
        if _ocr is None:
            from rapidocr import RapidOCR

            _ocr = RapidOCR(params={"Global.log_level": "error"})
        return _ocr


def text_quality(text: str) -> float:
    """Share of the non-space characters that are letters, digits or ordinary punctuation (0..1)."""
    chars = [c for c in text if not c.isspace()]
    if not chars:
        return 0.0
    good = sum(1 for c in chars if unicodedata.category(c)[0] in "LNPS" and c != "\ufffd")
    return good / len(chars)


def usable_text_layer(text: str) -> bool:
    words = text.split()
    return len(words) >= 3 and sum(len(w) for w in words) >= 12 and text_quality(text) >= 0.9


def text_to_markdown(text: str) -> str:
    """Paragraphs from the text layer: lines re-joined, blank lines kept as breaks, hyphenation undone."""
    paragraphs: list[str] = []
    current: list[str] = []
    for raw in text.split("\n"):
        line = raw.strip()
        if not line:
            if current:
                paragraphs.append(_join(current))
                current = []
            continue
        current.append(line)
    if current:
        paragraphs.append(_join(current))
    return "\n\n".join(paragraphs).strip() + "\n" if paragraphs else ""


def _join(lines: list[str]) -> str:
    out = lines[0]
    for line in lines[1:]:
        if out.endswith("-") and len(out) > 1 and out[-2].isalpha() and line[:1].islower():
            out = out[:-1] + line
        else:
            out = f"{out} {line}"
    return out


def ocr_to_markdown(boxes: list[Any], texts: list[str]) -> str:
    """OCR lines in reading order (top to bottom), split into paragraphs at large vertical gaps."""
    if not texts:
        return ""
    lines = sorted(
        ((float(np.min(b[:, 1])), float(np.max(b[:, 1])), float(np.min(b[:, 0])), t)
         for b, t in zip((np.asarray(b) for b in boxes), texts, strict=True)),
        key=lambda item: (round(item[0] / 8), item[2]),
    )
    heights = [bottom - top for top, bottom, _, _ in lines]
    typical = statistics.median(heights) if heights else 10.0
    paragraphs: list[list[str]] = [[lines[0][3]]]
    previous_bottom = lines[0][1]
    for top, bottom, _, text in lines[1:]:
        if top - previous_bottom > 0.8 * typical:
            paragraphs.append([])
        paragraphs[-1].append(text)
        previous_bottom = max(previous_bottom, bottom)
    return "\n\n".join(_join(p) for p in paragraphs if p).strip() + "\n"


class CpuEngine:
    name = "cpu"
    needs_text_layer = False  # reads the text layer itself, only for PDFs
    needs_image = False  # renders only pages without a usable text layer

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def parse(self, page: PageInput, *, temperature: float = 0.0) -> PageOutput:
        if page.is_pdf:
            text = pdf_text_layer(page.data)
            if usable_text_layer(text):
                quality = text_quality(text)
                return PageOutput(markdown=text_to_markdown(text), engine=self.name, model="text-layer",
                                  confidence=round(quality, 4),
                                  signals={"text_layer_quality": quality, "text_layer_chars": float(len(text))},
                                  details={"source": "text_layer"})
            image = render_pdf_page(page.data, longest_side=self._ocr_side(), rotation=page.rotation,
                                    max_pixels=self.settings.limits.max_render_pixels,
                                    max_side_pt=self.settings.limits.max_page_side_pt)
        else:
            image = load_image(page.data)
            if page.rotation:
                image = image.rotate(-page.rotation, expand=True)
        return self._ocr_page(image)

    def _ocr_side(self) -> int:
        # Letter width at the configured DPI, capped where RapidOCR's detector stops gaining.
        return min(2400, int(11 * self.settings.engine.ocr_dpi))

    def _ocr_page(self, image: Image.Image) -> PageOutput:
        result = get_ocr()(np.asarray(image))
        texts = list(result.txts or ())
        scores = [float(s) for s in (result.scores or ())]
        boxes = list(result.boxes) if result.boxes is not None else []
        mean_score = sum(scores) / len(scores) if scores else 0.0
        return PageOutput(markdown=ocr_to_markdown(boxes, texts), engine=self.name, model="rapidocr-ppocrv6",
                          confidence=round(mean_score, 4) if texts else 0.0,
                          signals={"ocr_mean_score": mean_score, "ocr_lines": float(len(texts))},
                          width_px=image.width, height_px=image.height, details={"source": "ocr"})

    def check_health(self) -> None:
        return None
