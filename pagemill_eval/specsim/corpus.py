"""Corpus cases (MANIFEST.tsv) and their page-level ground truth, which is the output specsim's oracle emits.

A case's ground-truth files are tried in this order; the first that gives every page a target wins:
1. Markdown (`*.md`): a model's kind of output. A one-page document takes it whole; a longer one is cut at page
   boundaries read from docling's DoclingDocument `*.json` beside it (the first body item of each page is found
   in the Markdown, which docling writes in the same order). YAML front matter is dropped (it is olmOCR's
   metadata, not page content).
2. HTML tables (`*.derived.tables.html`): a cropped table image's whole content, or a page's table regions
   (ICDAR-2013, scope "tables": the other text of those pages is not in the reference).
3. Plain text (`*.txt`): spaces collapsed and lines stripped, since layout-preserving padding is no model's
   output.
4. LaTeX source (`*.tex`): the document body, comments and TikZ drawings removed; formulas read as a model
   writes them, other markup is an approximation.
Rule-based references (olmOCR-bench `*.jsonl`), structure-only files and whole-document references of a
multi-page document without page boundaries give no target: such a case is skipped, with the reason. HTML
comments (`<!-- image -->` placeholders and the like) are removed from every target.
"""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class Case:
    case_id: str
    document: Path
    kinds: tuple[str, ...]
    ground_truth: tuple[Path, ...]


@dataclass(frozen=True, slots=True)
class PageTarget:
    page_number: int  # 1-based
    text: str
    source: str  # the ground-truth file name
    scope: str = "page"  # "page", or "tables" when the reference covers only the page's tables


REFERENCE_FORMATS = (("Markdown", ".md"), ("HTML tables", ".derived.tables.html"), ("plain text", ".txt"),
                     ("LaTeX source", ".tex"))


def reference_format(source: str) -> str:
    """The kind of text a target is, from its ground-truth file name: what form the oracle writes the page in."""
    return next((name for name, suffix in REFERENCE_FORMATS if source.endswith(suffix)), "other")


class NoPageTruth(Exception):
    """The case has no ground truth that can serve as a page's target output."""


def read_manifest(corpus_dir: Path) -> list[Case]:
    cases = []
    with (corpus_dir / "MANIFEST.tsv").open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            document = corpus_dir / row["file"]
            truth = tuple(corpus_dir / name for name in row["ground_truth_files"].split(";") if name.strip("- "))
            kinds = tuple(kind.strip() for kind in row["kind"].split(",") if kind.strip())
            cases.append(Case(document.parent.name, document, kinds, truth))
    return cases


def page_targets(case: Case, page_count: int) -> list[PageTarget]:
    """One target per page, from the first usable ground-truth file; raises `NoPageTruth` with the reason."""
    reasons = []
    for reader in (_markdown, _html_tables, _plain_text, _latex):
        try:
            targets = reader(case, page_count)
        except NoPageTruth as exc:
            reasons.append(str(exc))
            continue
        if targets is not None:
            return targets
    reasons.append("no page-level transcription (" + (", ".join(p.name for p in case.ground_truth) or "none") + ")")
    raise NoPageTruth("; ".join(reasons))


def _first(case: Case, suffix: str, *, exclude: str | None = None) -> Path | None:
    return next((p for p in case.ground_truth
                 if p.name.endswith(suffix) and not (exclude and p.name.endswith(exclude)) and p.is_file()), None)


def _whole(case: Case, page_count: int, path: Path, text: str, scope: str = "page") -> list[PageTarget]:
    if page_count != 1:
        raise NoPageTruth(f"{path.name} covers {page_count} pages without page boundaries")
    return [PageTarget(1, text, path.name, scope)]


# Markdown ------------------------------------------------------------------------------------------------------

_FRONT_MATTER = re.compile(r"\A---[ \t]*\n.*?\n---[ \t]*\n", re.DOTALL)
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)


def tidy(text: str) -> str:
    lines = [line.rstrip() for line in _COMMENT.sub("", text).replace("\r\n", "\n").split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def _markdown(case: Case, page_count: int) -> list[PageTarget] | None:
    path = _first(case, ".md")
    if path is None:
        return None
    text = _FRONT_MATTER.sub("", path.read_text(encoding="utf-8"))
    if page_count == 1:
        return [PageTarget(1, tidy(text), path.name)]
    docling = path.with_suffix(".json")
    if not docling.is_file():
        raise NoPageTruth(f"{path.name} covers {page_count} pages and has no DoclingDocument to cut it by")
    pages = split_docling_markdown(text, json.loads(docling.read_text(encoding="utf-8")), page_count)
    return [PageTarget(number, tidy(page), path.name) for number, page in enumerate(pages, start=1)]


def docling_items(document: dict[str, Any]) -> list[tuple[int, str]]:
    """(page number, text) of the body items in reading order — the order docling writes its Markdown in."""
    items: list[tuple[int, str]] = []

    def visit(ref: str) -> None:
        _, collection, index = ref.split("/")
        node = document[collection][int(index)]
        if node.get("content_layer", "body") != "body":
            return
        page = node["prov"][0]["page_no"] if node.get("prov") else None
        if page is not None:
            if collection == "texts":
                items.append((page, node.get("text", "")))
            elif collection == "tables":
                items.extend((page, cell.get("text", "")) for cell in node["data"]["table_cells"])
        for child in node.get("children", []):
            visit(child["$ref"])

    for child in document["body"]["children"]:
        visit(child["$ref"])
    return [(page, text) for page, text in items if text.strip()]


def _norm(text: str) -> str:
    text = text.replace("\\", "").replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
    return " ".join(text.split())


def split_docling_markdown(markdown: str, document: dict[str, Any], page_count: int) -> list[str]:
    """Cuts docling's Markdown before the line holding the first item of each page that can be found in it."""
    lines = markdown.split("\n")
    normalized = [_norm(line) for line in lines]
    items = docling_items(document)
    cuts = [0]
    for page in range(2, page_count + 1):
        probes = [_norm(text)[:40] for number, text in items if number == page][:5]
        cut = next((row for probe in probes if len(probe) >= 4
                    for row in range(cuts[-1], len(lines)) if probe in normalized[row]), None)
        if cut is None:
            raise NoPageTruth(f"page {page} of the docling reference cannot be located in its Markdown")
        cuts.append(cut)
    cuts.append(len(lines))
    return ["\n".join(lines[start:end]) for start, end in zip(cuts, cuts[1:], strict=False)]


# Other formats -------------------------------------------------------------------------------------------------

def _html_tables(case: Case, page_count: int) -> list[PageTarget] | None:
    path = _first(case, ".derived.tables.html")
    if path is None:
        return None
    # A cropped table image is all table; a PDF page around a table has more text than the reference holds.
    scope = "tables" if case.document.suffix.lower() == ".pdf" else "page"
    return _whole(case, page_count, path, tidy(path.read_text(encoding="utf-8")), scope)


def normalize_plain_text(text: str) -> str:
    lines = [" ".join(line.split()) for line in text.replace("\r\n", "\n").split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def _plain_text(case: Case, page_count: int) -> list[PageTarget] | None:
    path = _first(case, ".txt")
    if path is None:
        return None
    return _whole(case, page_count, path, normalize_plain_text(path.read_text(encoding="utf-8", errors="replace")))


_TEX_BODY = re.compile(r"\\begin\{document\}(.*?)\\end\{document\}", re.DOTALL)
_TEX_COMMENT = re.compile(r"(?<!\\)%.*")
_TIKZ = re.compile(r"\\begin\{tikzpicture\}.*?\\end\{tikzpicture\}", re.DOTALL)


def latex_body(source: str) -> str:
    match = _TEX_BODY.search(source)
    body = match.group(1) if match else source
    body = _TIKZ.sub("", _TEX_COMMENT.sub("", body))
    return normalize_plain_text("\n".join(line.strip() for line in body.split("\n")))


def _latex(case: Case, page_count: int) -> list[PageTarget] | None:
    path = _first(case, ".tex")
    if path is None:
        return None
    return _whole(case, page_count, path, latex_body(path.read_text(encoding="utf-8", errors="replace")))
