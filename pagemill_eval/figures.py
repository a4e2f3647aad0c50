"""Figures, form fields and merged tables (docs/outputs.md) measured on a corpus, and what each costs per page.

Form fields: each PDF is its own ground truth — the fields pdfium's form API reads (`services/results/forms.py`)
against pypdf's `get_fields()` of the same file (names found, values equal, checked states equal). Tables
across pages: the merges `services/results/tables.py` makes over the cpu engine's pages against the ICDAR-2013
structure (`*-reg.xml`: a table whose regions lie on several pages is one table across pages); a merge where the
ground truth has separate tables is a false merge.

Ground truth: docling's JSON (`pictures[].prov[].bbox`, PDF points, bottom-left origin, turned to top-left here)
where a case has one; a figure element matches a picture when their boxes overlap with IoU >= `MATCH_IOU`
(one-to-one, best first). Cases without such a file count their figures (found) but score nothing. The cost is
the document step's cropping (`services/results/figures.py`: render the page at `outputs.figure_dpi`, crop,
encode) in ms per page, split by digital pages (a text layer) and scanned ones (none). Charts: the figure
elements the cpu engine marks `chart` (vector bar/line charts, `services/worker/engines/cpu/charts.py`), those
with a derived data table, and the chart finder's own time per digital page (`find_charts` over the page's
text layer and shapes; a scanned page is never searched, the cpu engine reads charts only from drawings).

    .venv/bin/python -m pagemill_eval.figures ../shared/corpus/dev ../shared/corpus/wide --write docs/evaluation.md
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from PIL import Image

from pagemill_eval.corpus import Case, load_cases
from pagemill_eval.generated_forms import KEY_VALUES, OPTIONS, boxes_pdf, boxes_scan
from pagemill_eval.sections import write_section
from services.core.elements import Element, ElementType
from services.core.pages import PageEntry, entry_size
from services.core.pdf import PDF, pdf_text_layer
from services.core.settings import Settings
from services.results.figures import crop_figures, page_image
from services.results.forms import read_form_fields
from services.results.key_values import layout_fields
from services.results.marks import mark_boxes
from services.results.tables import merge_tables
from services.runner import page_inputs, parse_locally
from services.worker.engines.cpu import charts, textlayer

SECTION = "figures"
GENERATED = "generated form"
MATCH_IOU = 0.5
Box = tuple[float, float, float, float]


def iou(a: Box, b: Box) -> float:
    width = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    height = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = width * height
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def truth_pictures(case: Case) -> dict[int, list[Box]] | None:
    """Page number -> picture boxes (top-left points) from the case's docling JSON, or None without one."""
    for path in sorted(case.folder.glob("*.json")):
        try:
            body = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            continue
        if not isinstance(body, dict) or "pictures" not in body:
            continue
        heights = {int(k): float(v["size"]["height"]) for k, v in (body.get("pages") or {}).items()}
        found: dict[int, list[Box]] = {}
        for picture in body["pictures"]:
            for prov in picture.get("prov") or []:
                box, page = prov["bbox"], int(prov["page_no"])
                if box.get("coord_origin", "BOTTOMLEFT") == "BOTTOMLEFT":
                    height = heights.get(page, 792.0)
                    found.setdefault(page, []).append((box["l"], height - box["t"], box["r"], height - box["b"]))
                else:
                    found.setdefault(page, []).append((box["l"], box["t"], box["r"], box["b"]))
        return found
    return None


def matched(found: list[Box], truth: list[Box]) -> int:
    pairs = sorted(((iou(f, t), i, j) for i, f in enumerate(found) for j, t in enumerate(truth)), reverse=True)
    used_found: set[int] = set()
    used_truth: set[int] = set()
    for score, i, j in pairs:
        if score < MATCH_IOU:
            break
        if i not in used_found and j not in used_truth:
            used_found.add(i)
            used_truth.add(j)
    return len(used_found)


def measure_case(case: Case, settings: Settings) -> dict[str, Any] | None:
    data = case.input_path.read_bytes()
    try:
        _, pages = page_inputs(data)
    except Exception:  # noqa: BLE001 - a case the platform refuses has no figures to count
        return None
    result = parse_locally(data, settings, engine_name="cpu")
    by_position = {index + 1: page for index, page in enumerate(pages)}
    started = time.perf_counter()
    kept = crop_figures(result.pages, lambda entry: page_image(
        by_position[int(entry["page"])][2], *entry_size(entry), settings))
    crop_ms = (time.perf_counter() - started) * 1000
    scanned = sum(1 for _, media, page in pages if media != PDF or not pdf_text_layer(page).strip())
    truth = truth_pictures(case)
    found_boxes: dict[int, list[Box]] = {}
    for entry in result.pages:
        for raw in entry.get("elements") or []:
            element = Element.model_validate(raw)
            if element.type is ElementType.FIGURE and element.bbox is not None:
                found_boxes.setdefault(int(entry["page_number"]), []).append(element.bbox)
    started = time.perf_counter()
    merges = merge_tables(result.pages)
    merge_ms = (time.perf_counter() - started) * 1000
    row: dict[str, Any] = {"case_id": case.case_id, "pages": len(pages), "scanned_pages": scanned,
                           **_boxes(data, result.pages, by_position, settings),
                           "merge_ms": round(merge_ms, 2), "merges": merges, **_forms(data, len(pages)),
                           **_multi_page_truth(case),
                           "found": sum(len(v) for v in found_boxes.values()), "kept": len(kept.assets),
                           "crop_ms": round(crop_ms, 1), "bytes": sum(a["bytes"] for a in kept.assets),
                           **_charts(result.pages, pages)}
    if truth is not None:
        row["truth"] = sum(len(v) for v in truth.values())
        row["matched"] = sum(matched(found_boxes.get(page, []), boxes) for page, boxes in truth.items())
    return row


def _charts(entries: list[PageEntry], pages: list[tuple[int, str, bytes]]) -> dict[str, Any]:
    """Chart figures and derived tables in the parsed pages, and the chart finder's time on the digital pages."""
    elements = [raw for entry in entries for raw in entry.get("elements") or []]
    finder_ms = 0.0
    for _, media, page in pages:
        if media != PDF:
            continue
        text = textlayer.read_page(page)
        if text.chars == 0:
            continue
        started = time.perf_counter()
        charts.find_charts(text)
        finder_ms += (time.perf_counter() - started) * 1000
    return {"charts": sum(1 for e in elements if e.get("chart")),
            "derived_tables": sum(1 for e in elements if e.get("derived")), "chart_ms": round(finder_ms, 2)}


def _forms(data: bytes, pages: int) -> dict[str, Any]:
    """The PDF's fields as pdfium reads them against pypdf's reading of its AcroForm (names, values, states)."""
    if not data.startswith(b"%PDF"):
        return {}
    import io

    from pypdf import PdfReader
    started = time.perf_counter()
    try:
        found = read_form_fields(data, list(range(1, pages + 1)))
    except Exception:  # noqa: BLE001 - a PDF pdfium refuses has no fields to compare
        found = {}
    form_ms = (time.perf_counter() - started) * 1000
    try:
        truth = PdfReader(io.BytesIO(data)).get_fields() or {}
    except Exception:  # noqa: BLE001 - pypdf cannot read it: no ground truth
        truth = {}
    fields = [f for page in found.values() for f in page]
    names = {f.name for f in fields}
    values_equal = sum(1 for f in fields if f.name in truth and f.kind == "text"
                       and str(truth[f.name].get("/V") or "") == f.value)
    text_fields = sum(1 for f in fields if f.name in truth and f.kind == "text")
    states_equal = sum(1 for f in fields if f.name in truth and f.kind == "checkbox"
                       and (str(truth[f.name].get("/V") or "/Off") not in ("/Off", "")) == f.checked)
    boxes = sum(1 for f in fields if f.name in truth and f.kind == "checkbox")
    terminal = {name for name, value in truth.items() if value.get("/FT")}
    return {"form_ms": round(form_ms, 2), "truth_fields": len(terminal), "fields_found": len(names & terminal),
            "text_values_equal": values_equal, "text_fields": text_fields, "checkbox_states_equal": states_equal,
            "checkboxes": boxes}


def _boxes(data: bytes, entries: list[PageEntry], by_position: dict[int, tuple[int, str, bytes]],
           settings: Settings) -> dict[str, Any]:
    """Checkboxes drawn or scanned (`services/results/marks.py`) and key–value pairs found, with the time the
    box search took on the case's digital and scanned pages."""
    import copy
    copied = copy.deepcopy(entries)
    started = time.perf_counter()
    found = mark_boxes(copied, data if data.startswith(b"%PDF") else None, lambda entry: page_image(
        by_position[int(entry["page"])][2], *entry_size(entry), settings))
    box_ms = (time.perf_counter() - started) * 1000
    boxes = [e for entry in copied for e in entry.get("elements") or [] if e["type"] == "checkbox"]
    pairs = [f for f in layout_fields(copied) if f["type"] == "key_value"]
    return {"boxes": found, "boxes_checked": sum(1 for b in boxes if b["checked"]), "box_ms": round(box_ms, 1),
            "key_values": len(pairs), "box_ids": [f'{b["id"]}:{b["text"][:30]}' for b in boxes][:20]}


def generated_forms(settings: Settings) -> dict[str, Any]:
    """The generated order form (`pagemill_eval.generated_forms`), digital and scanned: boxes found, their
    states and labels against the drawn ones, key–value pairs against the printed ones."""
    report: dict[str, Any] = {}
    truth = [(label, state != "") for label, state, _, _ in OPTIONS]
    pairs = [(key.rstrip(":"), value) for key, value, _ in KEY_VALUES]
    for name, data in (("digital", boxes_pdf()), ("scanned", boxes_scan())):
        result = parse_locally(data, settings, engine_name="cpu")
        _, pages = page_inputs(data)
        started = time.perf_counter()
        page_file = pages[0][2]

        def pixels(entry: PageEntry, page_file: bytes = page_file) -> Image.Image:
            return page_image(page_file, *entry_size(entry), settings)

        mark_boxes(result.pages, data if name == "digital" else None, pixels)
        box_ms = (time.perf_counter() - started) * 1000
        boxes = sorted((Element.model_validate(e) for e in result.pages[0]["elements"] if e["type"] == "checkbox"),
                       key=lambda e: (round(e.bbox[1] / 20), e.bbox[0]) if e.bbox else (0, 0.0))
        found_pairs = [(f["name"], f["value"]) for f in layout_fields(result.pages) if f["type"] == "key_value"]
        report[name] = {"boxes_truth": len(truth), "boxes_found": len(boxes),
                        "states_equal": sum(1 for b, (_, checked) in zip(boxes, truth, strict=False)
                                            if b.checked == checked) if len(boxes) == len(truth) else 0,
                        "labels_equal": sum(1 for b, (label, _) in zip(boxes, truth, strict=False) if b.text == label)
                        if len(boxes) == len(truth) else 0,
                        "key_values_truth": len(pairs), "key_values_equal": len(set(found_pairs) & set(pairs)),
                        "box_ms": round(box_ms, 1)}
    return report


def _multi_page_truth(case: Case) -> dict[str, Any]:
    """ICDAR-2013 region files: tables, and those whose regions lie on several pages."""
    import xml.etree.ElementTree as ET
    files = sorted(case.folder.glob("*-reg.xml"))
    if not files:
        return {}
    tables = [t for path in files for t in ET.parse(path).getroot().iter("table")]
    spanning = sum(1 for t in tables if len({r.get("page") for r in t.findall("region")}) > 1)
    return {"truth_tables": len(tables), "truth_multi_page_tables": spanning}


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    scored = [r for r in rows if "truth" in r]
    truth = sum(r["truth"] for r in scored)
    found_scored = sum(r["found"] for r in scored)
    hit = sum(r["matched"] for r in scored)
    digital = [r for r in rows if r["scanned_pages"] == 0]
    scanned = [r for r in rows if r["scanned_pages"] == r["pages"]]

    def per_page(group: list[dict[str, Any]]) -> float | None:
        pages = sum(r["pages"] for r in group)
        return round(sum(r["crop_ms"] for r in group) / pages, 1) if pages else None

    return {"cases": len(rows), "pages": sum(r["pages"] for r in rows), "found": sum(r["found"] for r in rows),
            "kept": sum(r["kept"] for r in rows), "scored_cases": len(scored), "truth_pictures": truth,
            "found_in_scored": found_scored, "matched": hit,
            "recall": round(hit / truth, 3) if truth else None,
            "precision": round(hit / found_scored, 3) if found_scored else None,
            "ms_per_page_digital": per_page(digital), "ms_per_page_scanned": per_page(scanned),
            "ms_per_page_with_figures": per_page([r for r in rows if r["kept"]]),
            "charts": sum(r.get("charts", 0) for r in rows),
            "derived_tables": sum(r.get("derived_tables", 0) for r in rows),
            "chart_ms_per_digital_page": round(sum(r.get("chart_ms", 0.0) for r in digital)
                                               / max(1, sum(r["pages"] for r in digital)), 3),
            "truth_fields": sum(r.get("truth_fields", 0) for r in rows),
            "fields_found": sum(r.get("fields_found", 0) for r in rows),
            "text_values_equal": f'{sum(r.get("text_values_equal", 0) for r in rows)}/'
                                 f'{sum(r.get("text_fields", 0) for r in rows)}',
            "checkbox_states_equal": f'{sum(r.get("checkbox_states_equal", 0) for r in rows)}/'
                                     f'{sum(r.get("checkboxes", 0) for r in rows)}',
            "form_ms_per_page": round(sum(r.get("form_ms", 0.0) for r in rows) / max(1, sum(r["pages"] for r in rows)),
                                      2),
            "boxes": sum(r.get("boxes", 0) for r in rows),
            "boxes_checked": sum(r.get("boxes_checked", 0) for r in rows),
            "key_values": sum(r.get("key_values", 0) for r in rows),
            "box_ms_digital": _box_ms(digital), "box_ms_scanned": _box_ms(scanned),
            "merges": sum(r["merges"] for r in rows),
            "truth_multi_page_tables": sum(r.get("truth_multi_page_tables", 0) for r in rows),
            "false_merges": sum(max(0, r["merges"] - r.get("truth_multi_page_tables", 0)) for r in rows
                                if "truth_tables" in r),
            "merge_ms_per_page": round(sum(r["merge_ms"] for r in rows) / max(1, sum(r["pages"] for r in rows)), 2)}


def _box_ms(group: list[dict[str, Any]]) -> float | None:
    pages = sum(r["pages"] for r in group)
    return round(sum(r.get("box_ms", 0.0) for r in group) / pages, 1) if pages else None


def markdown_section(report: dict[str, dict[str, Any]], command: str) -> str:
    lines = ["## Figures, form fields, tables across pages (`pagemill_eval/figures.py`)", "",
             f"`{command}` — the cpu engine's figure elements against docling's `pictures` (IoU >= {MATCH_IOU}, "
             "one-to-one) where a case has a docling JSON, and the document step's cropping at 144 dpi "
             "(`services/results/figures.py`) in ms per page (every page counted, those without figures too).", "",
             "| corpus | cases | pages | figures found | kept (cropped) | cases with picture truth | pictures in "
             "truth | matched | recall | precision | crop ms/page digital | crop ms/page scanned | crop ms/page "
             "(pages of cases with figures) | charts (vector) | derived tables | chart finder ms/page digital |",
             "|" + "---|" * 16]
    for name, figures in ((n, f) for n, f in report.items() if n != GENERATED):
        cells = [name, figures["cases"], figures["pages"], figures["found"], figures["kept"],
                 figures["scored_cases"], figures["truth_pictures"], figures["matched"], figures["recall"],
                 figures["precision"], figures["ms_per_page_digital"], figures["ms_per_page_scanned"],
                 figures["ms_per_page_with_figures"], figures.get("charts"), figures.get("derived_tables"),
                 figures.get("chart_ms_per_digital_page")]
        lines.append("| " + " | ".join("–" if c is None else str(c) for c in cells) + " |")
    lines += ["", "Form fields (each PDF its own ground truth: pypdf's `get_fields()`) and tables across pages "
              "(ICDAR-2013 `*-reg.xml`: a table with regions on several pages), same run:", "",
              "| corpus | AcroForm fields (pypdf) | found by pdfium | text values equal | checkbox states equal | "
              "form ms/page | tables merged | multi-page tables in truth | false merges (ICDAR cases) | "
              "merge ms/page |", "|" + "---|" * 10]
    for name, figures in ((n, f) for n, f in report.items() if n != GENERATED):
        cells = [name, figures["truth_fields"], figures["fields_found"], figures["text_values_equal"],
                 figures["checkbox_states_equal"], figures["form_ms_per_page"], figures["merges"],
                 figures["truth_multi_page_tables"], figures["false_merges"], figures["merge_ms_per_page"]]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    lines += ["", "Checkboxes without a form (`services/results/marks.py`: squares drawn on digital pages, boxes on "
              "scans) and key–value pairs (`services/results/key_values.py`), same run; the corpora have no "
              "printed forms, so every box found there is a false one:", "",
              "| corpus | boxes found | of them checked | key–value pairs | box search ms/page digital | "
              "box search ms/page scanned |", "|" + "---|" * 6]
    for name, figures in report.items():
        if name == GENERATED:
            continue
        cells = [name, figures["boxes"], figures["boxes_checked"], figures["key_values"],
                 figures["box_ms_digital"], figures["box_ms_scanned"]]
        lines.append("| " + " | ".join("–" if c is None else str(c) for c in cells) + " |")
    generated = report.get(GENERATED)
    if generated:
        lines += ["", "The generated order form (`pagemill_eval/generated_forms.py`: 4 drawn boxes, 2 ticked, a grid "
                  "of 8 touching cells and a square bullet that are not boxes, 3 key–value pairs), as a digital "
                  "PDF and as its 150 dpi rendering (a scan):", "",
                  "| page | boxes (truth) | boxes found | states equal | labels equal | key–value pairs (truth) | "
                  "pairs equal | box search ms |", "|" + "---|" * 8]
        for kind, found in generated.items():
            cells = [kind, found["boxes_truth"], found["boxes_found"], found["states_equal"], found["labels_equal"],
                     found["key_values_truth"], found["key_values_equal"], found["box_ms"]]
            lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines)





def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pagemill_eval.figures", description=__doc__.split("\n")[0])
    parser.add_argument("corpus_dirs", nargs="+", type=Path)
    parser.add_argument("--case", action="append", default=[], help="glob of case ids to keep")
    parser.add_argument("--json", type=Path, default=None, help="write the per-case rows here")
    parser.add_argument("--write", type=Path, default=None, help=f"put the table into this file's `{SECTION}` "
                                                                  "section (docs/evaluation.md)")
    args = parser.parse_args(argv)
    settings = Settings()
    report: dict[str, dict[str, Any]] = {}
    rows_by_corpus: dict[str, list[dict[str, Any]]] = {}
    for corpus in args.corpus_dirs:
        rows = []
        for case in load_cases(corpus, args.case or None):
            row = measure_case(case, settings)
            if row is not None:
                rows.append(row)
                print(json.dumps(row), flush=True)
        rows_by_corpus[corpus.name] = rows
        report[corpus.name] = summary(rows)
        print(corpus.name, json.dumps(report[corpus.name]), flush=True)
    report[GENERATED] = generated_forms(settings)
    print(GENERATED, json.dumps(report[GENERATED]), flush=True)
    if args.json:
        args.json.write_text(json.dumps({"report": report, "rows": rows_by_corpus}, indent=1) + "\n")
    if args.write:
        shown = " ".join(str(p) for p in args.corpus_dirs)
        write_section(args.write, markdown_section(report, f"python -m pagemill_eval.figures {shown}"), SECTION)
    return 0


if __name__ == "__main__":
    sys.exit(main())
