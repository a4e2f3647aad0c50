"""The prompt specsim measures: a fixed instruction, the page image, and an anchor.

The anchor is what the vllm engine puts in its prompt so prompt-lookup drafts hit. Measured: the page's embedded
text (pypdfium2), the cpu engine's OCR hypothesis of the rendered page, and **engine**: the anchor the engine
sends, built by the engine's own function (`services.worker.pipeline.page.page_anchor`, so the two cannot differ) —
in `auto` the cpu engine's reading of the page (its layout of the text layer when it trusts it, its OCR
otherwise). Each is whitespace-tidied and clipped to a character budget by the engine's `clip_anchor`, keeping
the head of the page (generation runs in reading order). The instruction and the anchor block are the generic
preset's; their exact words barely move the figures, since drafts come from text the output repeats.

Two more are oracles, never sent: what an anchor could reach at best. **reference**: the page's reference itself
(the oracle's output: every word and every mark right). **reference_markup**: the reference with its HTML tables
in the markup the engine writes (tag attributes dropped but rowspan and colspan, no whitespace between tags), other
references as they are: the same words, with the table markup the anchor can have.
"""

from __future__ import annotations

import re

from pagemill_eval.tokenizer import chat_prompt
from services.core.pdf import pdf_text_layer, png_bytes, render_pdf_page
from services.core.settings import EngineSettings, Settings
from services.worker.engines import PageInput, load_engine
from services.worker.engines.cpu.engine import ocr_longest_side
from services.worker.engines.vllm.presets import get_preset
from services.worker.pipeline.page import page_anchor

ANCHOR_KINDS = ("none", "text_layer", "ocr", "engine", "reference", "reference_markup")
ORACLE_ANCHORS = ("reference", "reference_markup")
DEFAULT_ANCHORS = tuple(name for name in ANCHOR_KINDS if name not in ORACLE_ANCHORS)  # what the engine could send
DEFAULT_ANCHOR_MAX_CHARS = EngineSettings.model_fields["anchor_max_chars"].default
# The production prompt: the generic preset's instruction and anchor block, so the figures are the engine's.
PROMPT_PRESET = get_preset("generic")


def prompt_text(anchor: str | None) -> str:
    """The whole prompt as the model's chat template renders it (system, user with image, assistant start)."""
    return chat_prompt(PROMPT_PRESET.user_text(anchor or None))


def text_layer(page_pdf: bytes | None) -> str:
    """The page's embedded text; an image has none."""
    return pdf_text_layer(page_pdf) if page_pdf is not None else ""


def ocr_text(settings: Settings, page: PageInput) -> str:
    """The cpu engine's OCR hypothesis of the page's pixels, also for a PDF page that has a text layer."""
    if page.is_pdf:
        rendered = render_pdf_page(page.data, longest_side=ocr_longest_side(settings),
                                   max_pixels=settings.limits.max_render_pixels,
                                   max_side_pt=settings.limits.max_page_side_pt)
        page = PageInput(page.document_id, page.index, "image/png", png_bytes(rendered))
    return load_engine("cpu", settings).parse(page).markdown


def engine_anchor(settings: Settings, page: PageInput, max_chars: int) -> tuple[str, str]:
    """The anchor the vllm engine sends for the page (clipped to `max_chars`) and its source: text_layer, ocr."""
    engine = settings.engine.model_copy(update={"anchor_max_chars": max_chars})
    anchor, source = page_anchor(page, settings.model_copy(update={"engine": engine}))
    return anchor or "", source


_TAG_ATTRIBUTES = re.compile(r"<([a-zA-Z][a-zA-Z0-9]*)(\s[^<>]*?)?(/?)>")
_SPAN = re.compile(r"""\s(?:row|col)span=(?:"[^"]*"|'[^']*'|\S+)""")
_BETWEEN_TAGS = re.compile(r">\s+<")


def engine_markup(reference: str) -> str:
    """A reference's HTML in the markup the engine's reading writes: tags without attributes but rowspan and
    colspan, nothing between one tag and the next; text outside tags is left as it is."""
    def bare(tag: re.Match[str]) -> str:
        spans = "".join(_SPAN.findall(tag.group(2) or ""))
        return f"<{tag.group(1)}{spans}{tag.group(3)}>"

    return _BETWEEN_TAGS.sub("><", _TAG_ATTRIBUTES.sub(bare, reference))


def oracle_anchor(name: str, reference: str) -> str:
    """An oracle anchor (`ORACLE_ANCHORS`) made from the page's reference."""
    if name not in ORACLE_ANCHORS:
        raise ValueError(f"{name!r} is not an oracle anchor: {', '.join(ORACLE_ANCHORS)}")
    return reference if name == "reference" else engine_markup(reference)
