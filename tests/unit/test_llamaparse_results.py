"""pagemill's JSON result as LlamaParse's job results, and LlamaParse's upload options (services/gateway/compat)."""

from __future__ import annotations

import pytest
from starlette.datastructures import FormData

from services.gateway.compat.errors import DetailError
from services.gateway.compat.llamaparse import upload_fields, zero_based_pages
from services.gateway.compat.llamaparse_results import json_result, markdown_result, text_result

RESULT = {"pages": [
    {"page_number": 3, "status": "succeeded", "width": 600.0, "height": 800.0, "markdown": "# Intro\n\nWords.",
     "elements": [
         {"type": "page_header", "text": "Journal", "markdown": "", "bbox": [0, 0, 100, 10]},
         {"type": "title", "text": "Intro", "markdown": "# Intro", "bbox": [10, 20, 110, 40]},
         {"type": "paragraph", "text": "Words.", "markdown": "Words.", "bbox": None},
         {"type": "table", "text": "a", "markdown": "| a |", "html": "<table></table>", "bbox": [10, 50, 60, 90]},
     ]},
    {"page_number": 4, "status": "failed", "elements": []},
    {"page_number": 5, "status": "succeeded", "markdown": "More.", "elements": [
        {"type": "heading", "level": 3, "text": "More", "markdown": "### More", "bbox": [1, 2, 3, 4]}]},
]}


def test_markdown_and_text_join_the_parsed_pages() -> None:
    assert markdown_result(RESULT, False) == {"markdown": "# Intro\n\nWords.\n---\nMore.",
                                              "job_metadata": {"job_pages": 3, "job_is_cache_hit": False}}
    assert text_result(RESULT, True)["text"] == "Intro\n\nWords.\n\na\n---\nMore"


def test_json_pages_items_and_furniture() -> None:
    pages = json_result(RESULT, False)["pages"]
    assert [(page["page"], page["status"]) for page in pages] == [(3, "OK"), (4, "ERROR"), (5, "OK")]
    first = pages[0]
    assert first["pageHeaderMarkdown"] == "Journal"
    assert [item["type"] for item in first["items"]] == ["heading", "text", "table"]
    assert first["items"][0] == {"type": "heading", "value": "Intro", "md": "# Intro", "lvl": 1,
                                 "bBox": {"x": 10, "y": 20, "w": 100, "h": 20}}
    assert "bBox" not in first["items"][1] and first["items"][2]["html"] == "<table></table>"
    assert pages[2]["items"][0]["lvl"] == 3


def test_target_pages_are_zero_based() -> None:
    assert zero_based_pages("0, 2-4") == "1,3-5"
    with pytest.raises(DetailError):
        zero_based_pages("1-")


def test_upload_options() -> None:
    form = FormData([("language", "fr"), ("save_images", "true"), ("fast_mode", "true"), ("target_pages", "0"),
                     ("invalidate_cache", "true"), ("line_level_bounding_box", "false"), ("gpt4o_mode", "false")])
    assert upload_fields(form) == {"mode": "fast", "pages": "1", "cache": "false"}
    for refused in [("parse_mode", "parse_page_with_agent"), ("line_level_bounding_box", "true"),
                    ("webhook_url", "https://example.com")]:
        with pytest.raises(DetailError) as raised:
            upload_fields(FormData([refused]))
        assert raised.value.code == "unsupported_option" and refused[0] in raised.value.message
