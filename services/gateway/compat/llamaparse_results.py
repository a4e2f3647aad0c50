"""A finished document's JSON result as LlamaParse's job results (`/api/parsing/job/{id}/result/{type}`).

    markdown  {"markdown": pages' Markdown joined by "\\n---\\n", "job_metadata"}
    text      {"text": pages' plain text joined the same way, "job_metadata"}
    json      {"pages": [{page, md, text, items, images, status, width, height}], "job_metadata"}

An item is a `heading` (with `lvl`), a `table` (with `html`) or `text`, each with `value`, `md` and `bBox`
({x, y, w, h} in PDF points, top-left origin). Page headers and footers are not items: they are the page's
`pageHeaderMarkdown` and `pageFooterMarkdown`, as LlamaParse gives them. A page pagemill could not parse has
`status: "ERROR"` and no content.
"""

from __future__ import annotations

from typing import Any

PAGE_SEPARATOR = "\n---\n"
HEADINGS = frozenset({"title", "heading"})
FURNITURE = {"page_header": "pageHeaderMarkdown", "page_footer": "pageFooterMarkdown"}


def job_metadata(result: dict[str, Any], cached: bool) -> dict[str, Any]:
    return {"job_pages": len(result.get("pages", [])), "job_is_cache_hit": cached}


def _succeeded(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [page for page in result.get("pages", []) if page.get("status") == "succeeded"]


def page_text(page: dict[str, Any]) -> str:
    return "\n\n".join(e["text"].strip() for e in page.get("elements", [])
                       if e.get("text", "").strip() and e["type"] not in FURNITURE)


def markdown_result(result: dict[str, Any], cached: bool) -> dict[str, Any]:
    markdown = PAGE_SEPARATOR.join((page.get("markdown") or "").strip() for page in _succeeded(result))
    return {"markdown": markdown, "job_metadata": job_metadata(result, cached)}


def text_result(result: dict[str, Any], cached: bool) -> dict[str, Any]:
    return {"text": PAGE_SEPARATOR.join(page_text(page) for page in _succeeded(result)),
            "job_metadata": job_metadata(result, cached)}


def _item(element: dict[str, Any]) -> dict[str, Any]:
    kind = element["type"]
    item: dict[str, Any] = {"type": "heading" if kind in HEADINGS else "table" if kind == "table" else "text",
                            "value": element.get("text") or "", "md": element.get("markdown") or ""}
    if kind in HEADINGS:
        item["lvl"] = 1 if kind == "title" else element.get("level") or 1
    if kind == "table" and element.get("html"):
        item["html"] = element["html"]
    if element.get("bbox"):
        x0, y0, x1, y1 = element["bbox"]
        item["bBox"] = {"x": x0, "y": y0, "w": x1 - x0, "h": y1 - y0}
    return item


def json_result(result: dict[str, Any], cached: bool) -> dict[str, Any]:
    pages = []
    for page in result.get("pages", []):
        if page.get("status") != "succeeded":
            pages.append({"page": page["page_number"], "status": "ERROR", "md": "", "text": "", "items": []})
            continue
        entry: dict[str, Any] = {"page": page["page_number"], "status": "OK", "md": page.get("markdown") or "",
                                 "text": page_text(page), "images": [], "width": page.get("width"),
                                 "height": page.get("height"), "items": []}
        for element in page.get("elements", []):
            if element["type"] in FURNITURE:
                key = FURNITURE[element["type"]]
                entry[key] = "\n".join(filter(None, (entry.get(key), element.get("text") or "")))
            else:
                entry["items"].append(_item(element))
        pages.append(entry)
    return {"pages": pages, "job_metadata": job_metadata(result, cached)}


RESULTS = {"markdown": markdown_result, "text": text_result, "json": json_result}
