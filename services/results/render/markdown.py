"""Document Markdown: the pages in order, a comment marking where each begins, and failed pages said aloud."""

from __future__ import annotations

from typing import Any


def page_marker(page: dict[str, Any]) -> str:
    return f"<!-- page {page['page_number']} -->"


def render_markdown(pages: list[dict[str, Any]]) -> str:
    parts: list[str] = []
    for page in pages:
        if page["status"] == "succeeded":
            body = (page.get("markdown") or "").strip()
            parts.append(f"{page_marker(page)}\n\n{body}\n" if body else f"{page_marker(page)}\n")
        else:
            error = page.get("error") or {}
            parts.append(f"<!-- page {page['page_number']}: {page['status']}"
                         f" ({error.get('code', 'unknown')}: {error.get('message', '')}) -->\n")
    return "\n".join(parts)
