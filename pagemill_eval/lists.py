"""List structure: does the output have the ground truth's list items, one item each, and as many per list?

Text similarity barely moves when two bullets are merged into one or an item is cut in two (the words are all
there), so lists are checked on their own, in the spirit of olmOCR-bench's `order` rules: each ground-truth
item must come out as one item of its own whose text matches (`item text`), and each ground-truth list must
come out as a list of the same length (`item count`). An empty bullet or a stray split makes the count wrong.

The reference lists are read from the Markdown ground truth beside a case (`*.md`, not a NOISY one).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rapidfuzz import fuzz

from pagemill_eval.textsim import normalize

# A list item's marker: a bullet (-, *, +, •) or a number ("1." / "1)"), then its text (which may be empty).
_ITEM = re.compile(r"^ {0,3}(?:[-*+•]|\d{1,9}[.)])(?:[ \t]+(?P<text>.*)|[ \t]*)$")
_BREAKS_LIST = re.compile(r"^ {0,3}(?:#{1,6}\s|<table|\||```|\$\$)")
# An item's text matches when its normalized form is this similar (rapidfuzz ratio, 0..1).
ITEM_MATCH = 0.9


@dataclass(slots=True)
class ListScore:
    items: int = 0  # ground-truth items
    items_matched: int = 0  # ... that came out as one item of their own with matching text
    lists: int = 0  # ground-truth lists
    lists_count_ok: int = 0  # ... whose best-matching output list has exactly as many items
    missed: list[str] = field(default_factory=list)  # the first few unmatched ground-truth items

    def to_json(self) -> dict[str, Any]:
        return {"items": self.items, "items_matched": self.items_matched, "lists": self.lists,
                "lists_count_ok": self.lists_count_ok, "missed": self.missed}


def markdown_lists(markdown: str) -> list[list[str]]:
    """The lists of a Markdown text, each a list of its items' text (markers removed, continuation lines
    joined). Items separated by blank lines stay one list; a heading, a table or a paragraph ends it."""
    lists: list[list[str]] = []
    current: list[str] | None = None
    blank = False
    for raw in markdown.replace("\r\n", "\n").split("\n"):
        if not raw.strip():
            blank = True
            continue
        item = _ITEM.match(raw)
        if item:
            if current is None:
                current = []
                lists.append(current)
            current.append((item.group("text") or "").strip())
        elif current is not None and not _BREAKS_LIST.match(raw) and (not blank or raw.startswith((" ", "\t"))):
            current[-1] = f"{current[-1]} {raw.strip()}".strip()
        else:
            current = None
        blank = False
    return lists


def reference_lists(ground_truth: tuple[Path, ...], noisy: bool) -> list[list[str]] | None:
    """The lists of a case's Markdown ground truth, or None when it has no Markdown reference with a list."""
    if noisy:
        return None
    found: list[list[str]] = []
    for path in ground_truth:
        if path.suffix == ".md":
            found.extend(markdown_lists(path.read_text(encoding="utf-8", errors="replace")))
    return found or None


def score_lists(predicted_markdown: str, truth: list[list[str]]) -> ListScore:
    """Each ground-truth item is paired with at most one output item (in order of best match); a list's count
    is right when the output list holding most of its paired items has as many items as it has."""
    predicted = markdown_lists(predicted_markdown)
    flat = [(list_index, normalize(text)) for list_index, items in enumerate(predicted) for text in items]
    taken: set[int] = set()
    score = ListScore(lists=len(truth))
    for items in truth:
        homes: dict[int, int] = {}
        for text in items:
            score.items += 1
            wanted = normalize(text)
            best, best_ratio = -1, 0.0
            for index, (_, candidate) in enumerate(flat):
                if index in taken:
                    continue
                ratio = fuzz.ratio(wanted, candidate) / 100
                if ratio > best_ratio:
                    best, best_ratio = index, ratio
            if best >= 0 and best_ratio >= ITEM_MATCH:
                taken.add(best)
                score.items_matched += 1
                homes[flat[best][0]] = homes.get(flat[best][0], 0) + 1
            elif len(score.missed) < 5:
                score.missed.append(text[:80])
        if homes:
            home = max(homes, key=lambda k: homes[k])
            score.lists_count_ok += len(predicted[home]) == len(items)
    return score


def aggregate(scores: list[ListScore | None]) -> dict[str, Any]:
    """Pooled over the cases with reference lists: the share of items matched and of lists with the right count."""
    present = [s for s in scores if s is not None]
    items = sum(s.items for s in present)
    lists = sum(s.lists for s in present)
    return {
        "list_cases": len(present),
        "list_items": items,
        "list_item_rate": round(sum(s.items_matched for s in present) / items, 4) if items else None,
        "lists": lists,
        "list_count_rate": round(sum(s.lists_count_ok for s in present) / lists, 4) if lists else None,
    }


def summary_line(name: str, block: dict[str, Any]) -> str | None:
    """One line of the report's list section, or None for a group without reference lists."""
    if not block.get("list_items"):
        return None
    return (f"{name:<16} {block['list_cases']:>5} {block['list_items']:>6} {block['list_item_rate']:>8.3f} "
            f"{block['lists']:>6} {block['list_count_rate']:>8.3f}")


SUMMARY_HEADER = f"{'lists':<16} {'cases':>5} {'items':>6} {'item-ok':>8} {'lists':>6} {'count-ok':>8}"
