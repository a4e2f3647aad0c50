"""Prompt building: each preset's text, the anchor inside it, the image as a data URL, the answer read back."""

from __future__ import annotations

import base64
import json

import pytest

from services.core.settings import Settings
from services.worker.engines.base import PageInput
from services.worker.engines.vllm.engine import VllmEngine
from services.worker.engines.vllm.presets import PRESETS, get_preset, parse_front_matter, parse_plain

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")


def engine(preset: str, **engine_settings: object) -> VllmEngine:
    return VllmEngine(Settings(engine={"kind": "vllm", "preset": preset, **engine_settings}))


def page(anchor: str | None) -> PageInput:
    return PageInput("doc", 0, "application/pdf", b"%PDF-", image=PNG, anchor=anchor)


def test_the_generic_prompt_carries_the_anchor_and_the_image() -> None:
    body = engine("generic", model="served-name", max_tokens=321).request_body(
        page("Invoice 12345\nTotal due: $1,234.56"), temperature=0.3)
    assert body["model"] == "served-name" and body["max_tokens"] == 321 and body["temperature"] == 0.3
    image, text = body["messages"][0]["content"]
    assert image["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(PNG).decode()
    assert "tables as HTML" in text["text"] and "LaTeX" in text["text"]
    assert "<<<PAGE_TEXT\nInvoice 12345\nTotal due: $1,234.56\nPAGE_TEXT>>>" in text["text"]


def test_without_an_anchor_the_prompt_is_the_preset_prompt_alone() -> None:
    for name, preset in PRESETS.items():
        body = engine(name).request_body(page(None), temperature=0.1)
        texts = [part["text"] for part in body["messages"][0]["content"] if part["type"] == "text"]
        assert texts == ([preset.prompt] if preset.prompt else []), name
        assert body["model"] == preset.model and body["max_tokens"] == preset.max_tokens


def test_olmocr_sends_its_text_before_the_image_with_the_raw_text_block() -> None:
    content = engine("olmocr").request_body(page("Chapter 1\nIt was a dark night."), temperature=0.1)[
        "messages"][0]["content"]
    assert [part["type"] for part in content] == ["text", "image_url"]
    assert content[0]["text"].startswith("Attached is one page of a document")
    assert content[0]["text"].endswith("RAW_TEXT_START\nChapter 1\nIt was a dark night.\nRAW_TEXT_END")


def test_presets_without_an_anchor_slot_ignore_the_anchor() -> None:
    content = engine("paddleocr_vl").request_body(page("some text"), temperature=0.1)["messages"][0]["content"]
    assert content[1] == {"type": "text", "text": "OCR:"}


def test_a_preset_without_a_prompt_sends_the_page_image_alone() -> None:
    content = engine("lighton_ocr").request_body(page("some text"), temperature=0.0)["messages"][0]["content"]
    assert [part["type"] for part in content] == ["image_url"]


def test_request_extra_reaches_the_request_but_cannot_override_the_essentials() -> None:
    body = engine("generic", request_extra={"top_k": 5, "min_tokens": 4}).request_body(page(None), temperature=0.2)
    assert body["top_k"] == 5 and body["min_tokens"] == 4 and body["temperature"] == 0.2
    json.dumps(body)  # it is what goes over the wire


def test_olmocr_front_matter_is_parsed_out_of_the_answer() -> None:
    answer = ("---\nprimary_language: en\nis_rotation_valid: False\nrotation_correction: 90\nis_table: true\n"
              "is_diagram: false\n---\n# Results\n\n<table><tr><td>1</td></tr></table>\n")
    parsed = parse_front_matter(answer)
    assert parsed.markdown == "# Results\n\n<table><tr><td>1</td></tr></table>\n"
    assert parsed.rotation_valid is False and parsed.rotation_correction == 90
    assert parsed.meta == {"primary_language": "en", "is_rotation_valid": False, "rotation_correction": 90,
                           "is_table": True, "is_diagram": False}
    # No front matter, or a nonsense rotation: the text is kept and nothing is turned.
    assert parse_front_matter("Just text").markdown == "Just text\n"
    odd = parse_front_matter("---\nis_rotation_valid: false\nrotation_correction: 45\n---\nText")
    assert odd.rotation_correction == 0 and odd.markdown == "Text\n"
    assert parse_front_matter("---\nprimary_language: null\n---\n").markdown == ""


def test_a_fenced_answer_is_unwrapped() -> None:
    assert parse_plain("```markdown\n# Title\n\nBody\n```").markdown == "# Title\n\nBody\n"
    assert parse_plain("no fence").markdown == "no fence\n"


def test_an_unknown_preset_is_refused_with_the_choices() -> None:
    with pytest.raises(ValueError, match="generic"):
        get_preset("nope")
