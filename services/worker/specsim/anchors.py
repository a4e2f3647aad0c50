"""The prompt specsim measures: a fixed instruction, the page image, and an anchor.

The anchor is what the vllm engine puts in its prompt so prompt-lookup drafts hit: the page's embedded text
(pypdfium2), the cpu engine's OCR hypothesis of the rendered page, or the cpu engine's own Markdown for the page
(its layout of the text layer when it trusts it, its OCR otherwise); whitespace tidied and clipped to a
character budget, keeping the head of the page (generation runs in reading order). The instruction and the
anchor block follow the generic preset's wording; their exact words barely move the figures, since drafts come
from text the output repeats.
"""

from __future__ import annotations

import re

from services.core.pdf import pdf_text_layer, png_bytes, render_pdf_page
from services.core.settings import Settings
from services.worker.engines import PageInput, load_engine
from services.worker.tokenizer import chat_prompt

ANCHOR_KINDS = ("none", "text_layer", "ocr", "cpu")
DEFAULT_ANCHOR_MAX_CHARS = 6000

INSTRUCTION = (
    "Convert this page of a document to Markdown, in reading order. Write headings with #, tables as HTML "
    "(<table>), and formulas as LaTeX ($...$ inline, $$...$$ on their own line). Keep the page's language and "
    "spelling. Do not describe pictures, add comments, or wrap the answer in a code block."
)
ANCHOR_BLOCK = (
    "\n\nText extracted from the same page by another tool follows between the markers. It may be incomplete, "
    "out of order or misread; use it to check your reading and copy it where it is right.\n"
    "<<<PAGE_TEXT\n{anchor}\nPAGE_TEXT>>>"
)
_SPACES = re.compile(r"[ \t\u00a0]+")


def clip_anchor(text: str, max_chars: int) -> str:
    """Whitespace tidied; cut at a line or word end within the budget, keeping the head of the page."""
    lines = [_SPACES.sub(" ", line).strip() for line in text.replace("\r", "\n").split("\n")]
    tidy = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    if len(tidy) <= max_chars:
        return tidy
    cut = tidy[:max_chars]
    boundary = max(cut.rfind("\n"), cut.rfind(" "))
    return (cut[:boundary] if boundary >= max_chars // 2 else cut).rstrip()


def prompt_text(anchor: str) -> str:
    """The whole prompt as the model's chat template renders it (system, user with image, assistant start)."""
    return chat_prompt(INSTRUCTION + (ANCHOR_BLOCK.format(anchor=anchor) if anchor else ""))


def text_layer(page_pdf: bytes | None) -> str:
    """The page's embedded text; an image has none."""
    return pdf_text_layer(page_pdf) if page_pdf is not None else ""


def ocr_longest_side(settings: Settings) -> int:
    # The size the cpu engine renders a scanned PDF page at for its own OCR (letter width at `ocr_dpi`, capped).
    return min(2400, int(11 * settings.engine.ocr_dpi))


def ocr_text(settings: Settings, page: PageInput) -> str:
    """The cpu engine's OCR hypothesis of the page's pixels, also for a PDF page that has a text layer."""
    if page.is_pdf:
        rendered = render_pdf_page(page.data, longest_side=ocr_longest_side(settings),
                                   max_pixels=settings.limits.max_render_pixels,
                                   max_side_pt=settings.limits.max_page_side_pt)
        page = PageInput(page.document_id, page.index, "image/png", png_bytes(rendered))
    return load_engine("cpu", settings).parse(page).markdown


def cpu_reading(settings: Settings, page: PageInput) -> tuple[str, str]:
    """The cpu engine's Markdown for the page as it parses it in production, and its source (text_layer / ocr)."""
    output = load_engine("cpu", settings).parse(page)
    return output.markdown, str(output.details.get("source", ""))
