"""The mode router: which engine a page goes to, decided when its job is queued.

`fast` sends every page to the cpu engine and `accurate` every page to vLLM. `balanced` sends vLLM only the
pages the cpu engine is likely to get wrong: no usable text layer (scans, images), tables, figures, formulas,
or text covering little of the page. Everything is read from the PDF's objects (pdfium), without rendering.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field, replace

import pypdfium2.raw as pdfium_c

from services.core.pdf import PDF, PDFIUM_LOCK, open_page_pdf
from services.core.settings import EngineKind, Settings
from services.worker.pipeline.quality import usable_text_layer

TEXT_DROPPED = "text_dropped"  # the cpu engine's warning (engines/cpu/routes.py) for a page that lost text

# Thresholds, as shares of the page's area or counts of page objects.
FIGURE_AREA = 0.12  # images (or a scan) covering this much of the page
TABLE_PATHS = 24  # ruling lines and cell borders: this many vector paths
MATH_SYMBOLS = 4  # characters only formulas use
LOW_TEXT_AREA = 0.03  # text boxes covering less than this, while the page holds other objects
MATH_FONTS = ("CMMI", "CMSY", "CMEX", "MSAM", "MSBM", "MATH", "EUCLID", "MTMI", "MTSY", "RSFS", "STIX", "ESINT")
_MATH_CHARS = frozenset("∑∫∮√∞≤≥≈≠±∓×÷∂∇∏∀∃∈∉⊂⊃⊆⊇∪∩→⇒⇔↦∝∼≡⊕⊗ℝℕℤℚℂαβγδεζηθκλμνξπρστφχψωΓΔΘΛΞΠΣΦΨΩ")
_MAX_OBJECTS = 5000  # a page with more is hard anyway; stop counting there


@dataclass(frozen=True, slots=True)
class PageTraits:
    text_layer_usable: bool
    text_chars: int = 0
    text_area: float = 0.0  # share of the page covered by text objects' boxes (overlaps counted twice)
    image_area: float = 0.0
    paths: int = 0
    math_symbols: int = 0
    math_fonts: bool = False
    reasons: tuple[str, ...] = field(default=())


def hard_reasons(traits: PageTraits) -> tuple[str, ...]:
    reasons = []
    if not traits.text_layer_usable:
        reasons.append("no_text_layer")
    if traits.image_area >= FIGURE_AREA:
        reasons.append("figures")
    if traits.paths >= TABLE_PATHS:
        reasons.append("tables")
    if traits.math_fonts or traits.math_symbols >= MATH_SYMBOLS:
        reasons.append("formulas")
    if traits.text_layer_usable and traits.text_area < LOW_TEXT_AREA and (traits.paths or traits.image_area):
        reasons.append("low_text_coverage")
    return tuple(reasons)


def pdf_page_traits(pdf_bytes: bytes) -> PageTraits:
    """What page 0 of a single-page PDF is made of."""
    with PDFIUM_LOCK:
        pdf = open_page_pdf(pdf_bytes)
        try:
            page = pdf[0]
            width, height = page.get_size()
            area = max(width * height, 1.0)
            textpage = page.get_textpage()
            text = str(textpage.get_text_bounded())
            textpage.close()
            text_area = image_area = 0.0
            paths = 0
            fonts: set[str] = set()
            for count, obj in enumerate(page.get_objects(max_depth=3)):
                if count >= _MAX_OBJECTS:
                    break
                kind = obj.type
                if kind == pdfium_c.FPDF_PAGEOBJ_PATH:
                    paths += 1
                    continue
                if kind not in (pdfium_c.FPDF_PAGEOBJ_TEXT, pdfium_c.FPDF_PAGEOBJ_IMAGE):
                    continue
                left, bottom, right, top = obj.get_bounds()
                box = max(0.0, min(right, width) - max(left, 0.0)) * max(0.0, min(top, height) - max(bottom, 0.0))
                if kind == pdfium_c.FPDF_PAGEOBJ_IMAGE:
                    image_area += box
                else:
                    text_area += box
                    if len(fonts) < 64:
                        fonts.add(_font_name(obj.raw))
            page.close()
        finally:
            pdf.close()
    traits = PageTraits(
        text_layer_usable=usable_text_layer(text), text_chars=len(text.strip()),
        text_area=round(min(text_area / area, 1.0), 4), image_area=round(min(image_area / area, 1.0), 4),
        paths=paths, math_symbols=sum(1 for c in text if c in _MATH_CHARS),
        math_fonts=any(marker in name.upper() for name in fonts for marker in MATH_FONTS),
    )
    return replace(traits, reasons=hard_reasons(traits))


def page_traits(media_type: str, data: bytes | None) -> PageTraits:
    if media_type != PDF or data is None:
        return PageTraits(text_layer_usable=False, reasons=("no_text_layer",))  # an image is pixels only
    return pdf_page_traits(data)


def routes_by_content(mode: str, document_engine: str) -> bool:
    """Whether the engine of a document's pages depends on what each page holds (`route_page` reads it)."""
    return document_engine == EngineKind.VLLM.value and mode == "balanced"


def route_page(mode: str, document_engine: str, media_type: str, data: bytes | None) -> tuple[str, tuple[str, ...]]:
    """(engine, why) for one page of a document whose default engine is `document_engine`."""
    if not routes_by_content(mode, document_engine):
        return document_engine, ()
    try:
        reasons = page_traits(media_type, data).reasons
    except Exception:  # noqa: BLE001 - a page pdfium cannot take apart is no page for the cpu engine either
        reasons = ("unreadable",)
    return (EngineKind.VLLM.value if reasons else EngineKind.CPU.value), reasons


def escalation_engine(mode: str, settings: Settings, engine_name: str, warnings: list[str]) -> str | None:
    """The engine a cpu page that dropped text (`text_dropped`) goes to next: vLLM, in `balanced` and `accurate`
    mode when the deployment's engine is vLLM; None when the page stays as it is."""
    if engine_name != EngineKind.CPU.value or TEXT_DROPPED not in warnings:
        return None
    if mode not in ("balanced", "accurate") or settings.engine.kind != EngineKind.VLLM:
        return None
    return EngineKind.VLLM.value


def _font_name(text_object: object) -> str:
    font = pdfium_c.FPDFTextObj_GetFont(text_object)
    if not font:
        return ""
    size = pdfium_c.FPDFFont_GetBaseFontName(font, None, 0)
    if size <= 0:
        return ""
    buffer = ctypes.create_string_buffer(size)
    pdfium_c.FPDFFont_GetBaseFontName(font, buffer, size)
    return buffer.value.decode("utf-8", errors="replace")
