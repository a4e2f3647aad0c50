"""Office documents: DOCX, HTML, EPUB and e-mail read natively beside their LibreOffice route, same run; the
other formats' LibreOffice conversion time.

    python -m bench.office ../shared/corpus/office --write docs/benchmarks.md --quality docs/evaluation.md

Per document of the native formats, both routes as the worker runs them:
- native: `convert_document` with `convert.native` on (guard + reader) — its Markdown is the elements'.
- LibreOffice: `convert_document` with it off (guard, sandboxed LibreOffice, PDF), then the PDF's pages parsed
  by the cpu engine in this process (`parse_locally`) — the Markdown the platform returned before.
Seconds are the reading itself (conversion, or conversion + page parsing); quality is measured against docling's
reference Markdown beside each document: distinct-word recall (as tests/integration/test_office.py counts it),
headings (share of the reference's headings found as headings, and of those at the reference's level), list
items (pagemill_eval/lists.py), and TEDS of the tables (pagemill_eval/teds.py) against the reference's tables —
its HTML where docling wrote one (`<name>.html`, with spans), else its pipe tables, which cannot hold a span
(they repeat a merged cell's text in every cell it covers): then both sides are compared in that form, spans
expanded, and the pipe cells' links, emphasis and image placeholders reduced to their words.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import time
import unicodedata
from dataclasses import dataclass
from html import escape
from pathlib import Path

from pagemill_eval.sections import write_section
from services.core.elements import Element, ElementType, page_markdown
from services.core.formats import NATIVE_TYPES, sniff_office
from services.core.pdf import inspect_document
from services.core.settings import ConvertSettings, Settings
from services.results.render.derive import pipe_table_html
from services.worker.office import convert_document

START, END = "<!-- bench-office:start -->", "<!-- bench-office:end -->"
QUALITY_START, QUALITY_END = "<!-- eval-office:start -->", "<!-- eval-office:end -->"
_NOISE = re.compile(r"<!--.*?-->|\]\([^)]*\)|\$\$.*?\$\$|\$[^$\n]+\$", re.DOTALL)
_WORD = re.compile(r"\w+", re.UNICODE)
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$", re.MULTILINE)
_TABLE = re.compile(r"<table\b.*?</table>", re.DOTALL | re.IGNORECASE)
_PIPE_ROW = re.compile(r"^\s*\|.*\|\s*$")
# What docling's pipe tables carry beyond a cell's words: links, emphasis, image placeholders.
_MARKS = re.compile(r"\[([^\]]*)\]\([^)]*\)|<!-- image -->|\*\*|~~|(?<![\w*])\*(?=\S)|(?<=\S)\*(?![\w*])")


@dataclass(frozen=True, slots=True)
class Quality:
    recall: float | None
    headings: str  # "found/of (at their level)"
    lists: str
    teds: float | None


def _words(text: str) -> set[str]:
    return set(_WORD.findall(unicodedata.normalize("NFKC", text).lower()))


def recall(truth: str, output: str) -> float:
    wanted = _words(_NOISE.sub(" ", truth))
    return 1 - len(wanted - _words(output)) / len(wanted) if wanted else 1.0


def _headings(markdown: str) -> list[tuple[int, str]]:
    return [(len(m.group(1)), " ".join(_WORD.findall(m.group(2).lower()))) for m in _HEADING.finditer(markdown)]


def heading_score(truth: str, output: str) -> str:
    wanted, found = _headings(truth), _headings(output)
    if not wanted:
        return "–"
    levels: dict[str, int] = {}
    for level, text in found:
        levels.setdefault(text, level)
    hits = [(level, text) for level, text in wanted if text in levels]
    same = len([text for level, text in hits if levels[text] == level])
    return f"{len(hits)}/{len(wanted)} ({same} same level)"


def list_score(truth: str, output: str) -> str:
    from pagemill_eval.lists import markdown_lists, score_lists

    lists = markdown_lists(truth)
    if not lists:
        return "–"
    score = score_lists(output, lists)
    return f"{score.items_matched}/{score.items}"


def reference_tables(reference: Path) -> tuple[list[str], bool]:
    """The reference's tables as HTML, and whether they came from pipe tables (no spans)."""
    html_reference = reference.with_suffix(".html")
    if html_reference.exists():
        return _TABLE.findall(html_reference.read_text(errors="replace")), False
    tables, block = [], []
    for line in [*reference.read_text(errors="replace").splitlines(), ""]:
        if _PIPE_ROW.match(line):
            block.append(_MARKS.sub(lambda m: m.group(1) or "", line))
        elif block:
            tables.append(pipe_table_html(block))
            block = []
    return tables, True


def as_grid(table_html: str) -> str:
    """A table as a pipe table would hold it: every span expanded, its text repeated in each cell it covers."""
    from lxml import html

    table = html.fromstring(table_html)
    grid: dict[tuple[int, int], str] = {}
    for r, row in enumerate(table.iter("tr")):
        c = 0
        for cell in row:
            if cell.tag not in ("td", "th"):
                continue
            while (r, c) in grid:
                c += 1
            text = " ".join(cell.text_content().split())
            for dr in range(int(cell.get("rowspan") or 1)):
                for dc in range(int(cell.get("colspan") or 1)):
                    grid[(r + dr, c + dc)] = text
            c += int(cell.get("colspan") or 1)
    rows = max((r for r, _ in grid), default=-1) + 1
    columns = max((c for _, c in grid), default=-1) + 1
    body = "".join("<tr>" + "".join(f"<td>{escape(grid.get((r, c), ''))}</td>" for c in range(columns)) + "</tr>"
                   for r in range(rows))
    return f"<table>{body}</table>"


def table_score(reference: Path, output: str) -> float | None:
    from pagemill_eval.teds import match_tables

    truth, flat = reference_tables(reference)
    predicted = _TABLE.findall(output)
    if flat:  # compared as the pipe tables hold them: spans expanded on both sides
        truth, predicted = [as_grid(t) for t in truth], [as_grid(p) for p in predicted]
    return match_tables(predicted, truth).teds if truth else None


def quality(reference: Path | None, markdown: str) -> Quality:
    if reference is None:
        return Quality(None, "–", "–", None)
    truth = reference.read_text(errors="replace")
    return Quality(recall(truth, markdown), heading_score(truth, markdown), list_score(truth, markdown),
                   table_score(reference, markdown))


def _native(data: bytes, media_type: str, runs: int = 5) -> tuple[float, str, list[Element]]:
    """The median of `runs` readings (a few milliseconds each, so one stall of a shared machine is not the
    figure), the Markdown and the elements."""
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        converted = convert_document(data, media_type, Settings(convert=ConvertSettings(native=True)))
        timings.append(time.perf_counter() - started)
    return statistics.median(timings), page_markdown(converted.elements or []), converted.elements or []


def _libreoffice(data: bytes, media_type: str, settings: Settings) -> tuple[float, float, bytes, str]:
    from services.runner import parse_locally

    started = time.perf_counter()
    converted = convert_document(data, media_type, Settings(convert=ConvertSettings(native=False)))
    converting = time.perf_counter() - started
    parsed = parse_locally(converted.pdf, settings, engine_name="cpu")
    return converting, time.perf_counter() - started, converted.pdf, parsed.markdown


def located(elements: list[Element], pdf: bytes) -> str:
    """How many of the native elements with words are found, in reading order, in the rendering's text layer
    (the first six words of their first line): what matching the rendering's pages and boxes onto them could
    start from."""
    import pypdfium2

    document = pypdfium2.PdfDocument(pdf)
    try:
        pages = [" ".join(_WORD.findall(page.get_textpage().get_text_range().lower())) for page in document]
    finally:
        document.close()
    rendered = " ".join(pages)
    cursor = found = total = 0
    for element in elements:
        first_line = element.text.split("\n", 1)[0]  # a list's first item, a table's first row
        key = " ".join(_WORD.findall(unicodedata.normalize("NFKC", first_line).lower())[:6])
        if not key or element.type in (ElementType.FORMULA, ElementType.FIGURE):  # not words of the page
            continue
        total += 1
        at = rendered.find(key, cursor)
        if at >= 0:
            found, cursor = found + 1, at + len(key)
    return f"{found}/{total}"


def _fmt(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--write", type=Path, help="the benchmarks page to rewrite the section of")
    parser.add_argument("--quality", type=Path, help="the evaluation page to rewrite the section of")
    args = parser.parse_args()
    settings = Settings()
    rows, quality_rows, other_rows = [], [], []
    speedups, native_times, per_page = [], [], []
    for path in sorted(args.corpus.glob("*/*")):
        data = path.read_bytes()
        media_type = sniff_office(data) if path.suffix != ".md" else None
        if media_type is None or path.name.endswith(".docx.html"):
            continue
        kind = path.suffix.lstrip(".")
        if media_type not in NATIVE_TYPES:
            started = time.perf_counter()
            pages = inspect_document(convert_document(data, media_type, settings).pdf).page_count
            seconds = time.perf_counter() - started
            per_page.append(seconds / pages)
            other_rows.append(f"| {path.name} | {kind} | {pages} | {seconds:.2f} | {seconds / pages:.2f} |")
            continue
        reference = path.with_name(path.name + ".md")
        reference = reference if reference.exists() else None
        native_s, native_md, elements = _native(data, media_type)
        convert_s, libre_s, pdf, libre_md = _libreoffice(data, media_type, settings)
        pages = inspect_document(pdf).page_count
        native_times.append(native_s)
        speedups.append(convert_s / native_s)
        rows.append(f"| {path.name} | {kind} | {native_s * 1000:.1f} ms | {convert_s:.2f} s | {libre_s:.2f} s "
                    f"({pages} p.) | {convert_s / native_s:,.0f}× | {located(elements, pdf)} |")
        for route, markdown in (("native", native_md), ("LibreOffice + cpu", libre_md)):
            score = quality(reference, markdown)
            quality_rows.append(f"| {path.name} | {route} | {_fmt(score.recall)} | {score.headings} | "
                                f"{score.lists} | {_fmt(score.teds)} |")
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    command = f"python -m bench.office {args.corpus} --write docs/benchmarks.md --quality docs/evaluation.md"
    table = "\n".join([
        START, "## Office documents: native reading beside LibreOffice", "",
        f"`{command}` — measured {when} on 2 cores shared with other jobs (load average {os.getloadavg()[0]:.1f} "
        "at the end). DOCX, HTML, EPUB and e-mail are read "
        "natively by default (`convert_document`: guard + reader; the median of 5 readings); beside them, in the "
        "same run, their LibreOffice "
        "route (guard, sandboxed conversion with cold start; then the converted pages parsed by the cpu engine). "
        f"Native reading: median {statistics.median(native_times) * 1000:.1f} ms, at least "
        f"{min(speedups):,.0f}× faster than the conversion alone (median {statistics.median(speedups):,.0f}×). "
        "Quality of both routes: [evaluation.md](evaluation.md#office-documents-native-beside-libreoffice).", "",
        "| document | type | native | LibreOffice conversion | conversion + cpu parse | conversion / native "
        "| native elements found on the rendering |",
        "|---|---|---|---|---|---|---|", *rows, "",
        "The last column: the native elements with words whose first line's first six words are found, in reading "
        "order, in "
        "the text layer of LibreOffice's rendering — what giving them that rendering's pages and boxes would start "
        "from (not done: see [office.md](office.md#docx-html-epub-and-e-mail-read-from-their-own-structure)).", "",
        "The formats still converted by LibreOffice (slides and sheets are read natively beside the rendered "
        f"pages), conversion time: median {statistics.median(per_page):.2f} s per page." if per_page else "", "",
        "| document | type | pages | seconds | seconds/page |", "|---|---|---|---|---|", *other_rows, END])
    quality_table = "\n".join([
        QUALITY_START, "## Office documents: native beside LibreOffice", "",
        f"`{command}` — measured {when}. Against docling's reference Markdown beside each document of "
        "`corpus/office` (e-mails have none): distinct-word recall; headings found as headings (and at the "
        "reference's level — docling puts a Word `Title` at `#` and shifts the sections under it, as the native "
        "reader does); list items matched (pagemill_eval/lists.py); mean TEDS of the reference's tables "
        "(its HTML where it has one, with spans; else its pipe tables, which cannot hold a span: then both sides "
        "are compared with spans expanded into repeated cells, and the reference cells' links and emphasis reduced "
        "to their words).",
        "", "| document | route | word recall | headings | list items | table TEDS |", "|---|---|---|---|---|---|",
        *quality_rows, QUALITY_END])
    print(table)
    print(quality_table)
    for target, name, text in ((args.write, "bench-office", table), (args.quality, "eval-office", quality_table)):
        if target is not None:
            write_section(target, text, name)


if __name__ == "__main__":
    main()
