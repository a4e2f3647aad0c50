"""HTML made ready for the converter: the document's <title> shown as its first heading (browsers show it in
the tab; a page rendering would lose it)."""

from __future__ import annotations

import html
import re

_TITLE = re.compile(rb"<title[^>]*>(.*?)</title\s*>", re.IGNORECASE | re.DOTALL)
_BODY = re.compile(rb"<body[^>]*>", re.IGNORECASE)
_TAGS = re.compile(rb"<[^>]+>")


def titled(data: bytes) -> bytes:
    match = _TITLE.search(data[:65_536])
    body = _BODY.search(data)
    if not match or not body:
        return data
    title = html.unescape(_TAGS.sub(b"", match.group(1)).decode("utf-8", errors="replace")).strip()
    if not title or title.encode() in data[body.end():body.end() + 4096]:
        return data  # no title, or the page already opens with it
    heading = f"<h1>{html.escape(title)}</h1>".encode()
    return data[:body.end()] + heading + data[body.end():]
