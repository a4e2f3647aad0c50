"""Page selections as customers write them: `"1-3,7"`."""

from __future__ import annotations

import re

from services.core.errors import ValidationFailed

# Page numbers of up to 9 digits: far above any page limit, far below Python's int-string limit.
_RANGE = re.compile(r"^\s*(\d{1,9})\s*(?:-\s*(\d{1,9})\s*)?$")
MAX_PAGES_SPEC_CHARS = 4096


def _ranges(spec: str) -> list[tuple[str, int, int]]:
    """Each part of a selection as (part, first, last), its form checked; the page count is not."""
    if len(spec) > MAX_PAGES_SPEC_CHARS:
        raise ValidationFailed(f"pages: at most {MAX_PAGES_SPEC_CHARS} characters")
    ranges = []
    for part in spec.split(","):
        match = _RANGE.match(part)
        if not match:
            raise ValidationFailed(f"pages: cannot read {part.strip()!r}; use a form like '1-3,7'")
        first = int(match.group(1))
        last = int(match.group(2) or first)
        if first < 1 or last < first:
            raise ValidationFailed(f"pages: {part.strip()!r} is not a valid range")
        ranges.append((part.strip(), first, last))
    return ranges


def parse_page_selection(spec: str | None, page_count: int) -> list[int]:
    """`"1-3,7"` → [1, 2, 3, 7] (1-based, sorted, unique); None or empty selects every page."""
    if spec is None or not spec.strip():
        return list(range(1, page_count + 1))
    selected: set[int] = set()
    for part, first, last in _ranges(spec):
        if last > page_count:
            raise ValidationFailed(f"pages: the document has {page_count} pages, {part!r} asks for more")
        selected.update(range(first, last + 1))
    return sorted(selected)


def check_page_selection_form(spec: str | None) -> None:
    """The selection's form alone, for a document whose page count is not known yet (it is converted first)."""
    if spec and len(spec) > MAX_PAGES_SPEC_CHARS:
        raise ValidationFailed(f"pages: at most {MAX_PAGES_SPEC_CHARS} characters")
    if spec and spec.strip():
        _ranges(spec)
