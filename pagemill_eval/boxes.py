"""Box IoU of table elements against ground truth that has boxes (docs/benchmarks.md, "Element boxes").

Ground truth: ICDAR-2013 table regions (`*-reg.xml`: PDF coordinates, origin bottom left, converted here to
top-left points) with each region's cells from `*-str.xml`; PubTabNet cell boxes (`*.pubtabnet.json`, image
pixels = points for an image page), the table's box being the union of its cells' boxes.

Two figures per table: the cpu engine's table element (best one-to-one match on the page), and the box the
aligner gives the ground-truth table's HTML when it is aligned to the page's words as if a model had answered
it (`services/worker/engines/vllm/align.py`, words from the cpu engine's reading of the page: text layer or OCR).

    .venv/bin/python -m pagemill_eval.boxes ../shared/corpus/dev ../shared/corpus/wide --write docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import html
import json
import platform
import re
import sys
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pagemill_eval.corpus import Case, load_cases
from pagemill_eval.sections import write_section
from services.core.elements import FURNITURE, BBox, Element, ElementType
from services.core.pdf import PDF, open_pdf, split_pdf
from services.core.settings import Settings
from services.worker.engines.base import PageInput, PageOutput
from services.worker.engines.cpu import CpuEngine
from services.worker.engines.vllm.align import align
from services.worker.engines.vllm.answer_blocks import split_answer

_IMAGE_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".webp": "image/webp",
                ".tif": "image/tiff", ".tiff": "image/tiff"}


@dataclass(frozen=True, slots=True)
class TruthTable:
    page: int  # 1-based
    bbox: BBox  # top-left points
    html: str  # the table's cells, for the aligned measurement


@dataclass(slots=True)
class TableScore:
    case_id: str
    page: int
    truth: BBox
    cpu: BBox | None
    cpu_iou: float
    aligned: BBox | None
    aligned_iou: float
    alignment: float | None
    whole_page_iou: float = 0.0  # aligned inside the whole page's answer


def iou(a: BBox | None, b: BBox | None) -> float:
    if a is None or b is None:
        return 0.0
    width = min(a[2], b[2]) - max(a[0], b[0])
    height = min(a[3], b[3]) - max(a[1], b[1])
    if width <= 0 or height <= 0:
        return 0.0
    inter = width * height
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def match(predicted: list[BBox], truth: list[BBox]) -> list[tuple[BBox | None, float]]:
    """For each truth box, the predicted box it is paired with (greedy one-to-one by IoU) and their IoU."""
    pairs = sorted(((iou(p, t), pi, ti) for pi, p in enumerate(predicted) for ti, t in enumerate(truth)),
                   reverse=True)
    result: list[tuple[BBox | None, float]] = [(None, 0.0)] * len(truth)
    used_p: set[int] = set()
    used_t: set[int] = set()
    for score, pi, ti in pairs:
        if score <= 0 or pi in used_p or ti in used_t:
            continue
        used_p.add(pi)
        used_t.add(ti)
        result[ti] = (predicted[pi], score)
    return result


# Ground truth -------------------------------------------------------------------------------------------------


def truth_tables(case: Case) -> list[TruthTable]:
    regions = next((p for p in case.ground_truth if p.name.endswith("-reg.xml")), None)
    if regions is not None:
        return _icdar_tables(case, regions)
    pubtabnet = next((p for p in case.ground_truth if p.name.endswith(".pubtabnet.json")), None)
    if pubtabnet is not None:
        return _pubtabnet_tables(case, pubtabnet)
    return []


def _page_frames(pdf_path: Path) -> list[tuple[float, float, float, float, int]]:
    """Each page's crop box (left, bottom, right, top) and /Rotate: the frame the cpu engine's boxes are in."""
    pdf = open_pdf(pdf_path.read_bytes())
    try:
        frames = []
        for index in range(len(pdf)):
            page = pdf[index]
            left, bottom, right, top = page.get_cropbox()
            frames.append((left, bottom, right, top, page.get_rotation() % 360))
            page.close()
        return frames
    finally:
        pdf.close()


def _to_top_left(x1: float, y1: float, x2: float, y2: float, frame: tuple[float, float, float, float, int]) -> BBox:
    left, bottom, right, top, rotation = frame
    if rotation:  # none of the corpus' ICDAR pages is turned; a turned one would need the full transform
        raise ValueError(f"page with /Rotate {rotation}: not supported by the box benchmark")
    return (min(x1, x2) - left, top - max(y1, y2), max(x1, x2) - left, top - min(y1, y2))


def _icdar_tables(case: Case, regions_path: Path) -> list[TruthTable]:
    frames = _page_frames(case.input_path)
    structure_path = regions_path.with_name(regions_path.name.replace("-reg.xml", "-str.xml"))
    cells: dict[tuple[str, str], str] = {}
    if structure_path.is_file():
        for table in ET.parse(structure_path).getroot().iter("table"):
            for region in table.iter("region"):
                cells[(table.get("id", ""), region.get("id", ""))] = _region_html(region)
    tables: list[TruthTable] = []
    for table in ET.parse(regions_path).getroot().iter("table"):
        for region in table.iter("region"):
            box = region.find("bounding-box")
            if box is None:
                continue
            page = int(region.get("page", "1"))
            x1, y1, x2, y2 = (float(box.get(k, "0")) for k in ("x1", "y1", "x2", "y2"))
            tables.append(TruthTable(page, _to_top_left(x1, y1, x2, y2, frames[page - 1]),
                                     cells.get((table.get("id", ""), region.get("id", "")), "")))
    return tables


def _region_html(region: ET.Element) -> str:
    """The region's cells as an HTML table, row by row (spans do not matter for alignment)."""
    rows: dict[int, list[tuple[int, str]]] = {}
    for cell in region.iter("cell"):
        content = " ".join((cell.findtext("content") or "").split())
        rows.setdefault(int(cell.get("start-row", "0")), []).append((int(cell.get("start-col", "0")), content))
    body = "".join("<tr>" + "".join(f"<td>{html.escape(text)}</td>" for _, text in sorted(cells)) + "</tr>"
                   for _, cells in sorted(rows.items()))
    return f"<table>{body}</table>"


def _pubtabnet_tables(case: Case, path: Path) -> list[TruthTable]:
    record = json.loads(path.read_text(encoding="utf-8"))
    boxes = [cell["bbox"] for cell in record["html"]["cells"] if cell.get("bbox")]
    if not boxes:
        return []
    union = (float(min(b[0] for b in boxes)), float(min(b[1] for b in boxes)), float(max(b[2] for b in boxes)),
             float(max(b[3] for b in boxes)))
    derived = next((p for p in case.ground_truth if p.name.endswith(".derived.tables.html")), None)
    text = re.sub(r"<!--.*?-->", "", derived.read_text(encoding="utf-8"), flags=re.DOTALL) if derived else ""
    found = re.search(r"<table\b.*?</table>", text, re.IGNORECASE | re.DOTALL)
    return [TruthTable(1, union, found.group(0) if found else "")]


# Measuring ----------------------------------------------------------------------------------------------------


def _parse_page(engine: CpuEngine, case: Case, page: int) -> PageOutput:
    path = case.png_variant or case.input_path
    data = path.read_bytes()
    if path.suffix.lower() == ".pdf":
        return engine.parse(PageInput(case.case_id, page - 1, PDF, next(split_pdf(data, [page]))))
    return engine.parse(PageInput(case.case_id, 0, _IMAGE_TYPES[path.suffix.lower()], data))


def score_case(engine: CpuEngine, case: Case) -> list[TableScore]:
    scores: list[TableScore] = []
    truth = truth_tables(case)
    for page in sorted({t.page for t in truth}):
        on_page = [t for t in truth if t.page == page]
        output = _parse_page(engine, case, page)
        predicted = [e.bbox for e in output.elements if e.type == ElementType.TABLE and e.bbox is not None]
        paired = match(predicted, [t.bbox for t in on_page])
        gt_tables = [" ".join(t.html.split()) for t in on_page]
        # The page's ground-truth tables as a model's answer, one block each, aligned to the page's words ...
        aligned = _aligned_tables("\n\n".join(gt_tables), output, page)
        # ... and inside a whole page: the cpu engine's other blocks around them, competing for the words.
        whole_answer, order = _whole_page_answer(output, on_page)
        whole = dict(zip(order, _aligned_tables(whole_answer, output, page), strict=False))
        for index, table in enumerate(on_page):
            element = aligned[index] if index < len(aligned) else None
            box = element.bbox if element is not None else None
            in_page = whole[index].bbox if index in whole else None
            scores.append(TableScore(case.case_id, page, table.bbox, paired[index][0], round(paired[index][1], 4),
                                     box, round(iou(box, table.bbox), 4),
                                     element.alignment if element is not None else None,
                                     round(iou(in_page, table.bbox), 4)))
    return scores


def _aligned_tables(answer: str, output: PageOutput, page: int) -> list[Element]:
    return [e for e in align(split_answer(answer, page=page), output.words) if e.type == ElementType.TABLE]


def _whole_page_answer(output: PageOutput, tables: list[TruthTable]) -> tuple[str, list[int]]:
    """The page as a model would answer it: the cpu engine's blocks in its reading order, where a block lies in a
    ground-truth table (the table itself, or its cells read as text) that table's HTML instead, once; a
    ground-truth table the cpu engine read nowhere goes at the end. Also returns the tables' order in it."""
    parts: list[str] = []
    placed: list[int] = []
    for element in output.elements:
        if element.type in FURNITURE or not element.markdown.strip():
            continue
        inside = next((i for i, t in enumerate(tables) if _share_inside(element.bbox, t.bbox) >= 0.5), None)
        if inside is None:
            if element.type != ElementType.TABLE:
                parts.append(element.markdown.strip())
        elif inside not in placed:
            placed.append(inside)
            parts.append(" ".join(tables[inside].html.split()))
    rest = [i for i in range(len(tables)) if i not in placed]
    parts += [" ".join(tables[i].html.split()) for i in rest]
    return "\n\n".join(parts), placed + rest


def _share_inside(box: BBox | None, region: BBox) -> float:
    if box is None:
        return 0.0
    width = min(box[2], region[2]) - max(box[0], region[0])
    height = min(box[3], region[3]) - max(box[1], region[1])
    area = (box[2] - box[0]) * (box[3] - box[1])
    return width * height / area if width > 0 and height > 0 and area > 0 else 0.0


def measure(corpus_dirs: list[Path], settings: Settings | None = None,
            patterns: list[str] | None = None) -> dict[str, Any]:
    engine = CpuEngine(settings or Settings())
    report: dict[str, Any] = {"splits": {}, "tables": []}
    everything: list[TableScore] = []
    for corpus_dir in corpus_dirs:
        split: list[TableScore] = []
        for case in load_cases(corpus_dir, patterns):
            split.extend(score_case(engine, case))
        everything.extend(split)
        report["splits"][corpus_dir.name] = summary(split)
        report["tables"].extend({"split": corpus_dir.name, **asdict(s)} for s in split)
    report["overall"] = summary(everything)
    return report


def summary(scores: list[TableScore]) -> dict[str, Any]:
    count = len(scores)
    return {"tables": count,
            "cpu_mean_iou": round(sum(s.cpu_iou for s in scores) / count, 3) if count else None,
            "aligned_mean_iou": round(sum(s.aligned_iou for s in scores) / count, 3) if count else None,
            "whole_page_mean_iou": round(sum(s.whole_page_iou for s in scores) / count, 3) if count else None,
            "cpu_found": sum(1 for s in scores if s.cpu is not None),
            "aligned_boxed": sum(1 for s in scores if s.aligned is not None)}


SECTION = "element-boxes"


def markdown_section(report: dict[str, Any], command: str) -> str:
    """The docs/benchmarks.md section: the figures per split, and the tables the cpu engine boxes worst."""
    lines = [
        "## Element boxes: table IoU against ground truth (`make bench-boxes`)", "",
        f"Command: `{command}`  ",
        f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, Python {platform.python_version()}. Ground truth: "
        "ICDAR-2013 table regions (`*-reg.xml`, bottom-left PDF coordinates turned into top-left points), "
        "PubTabNet cell boxes (the table's box is the union of its cells', image pixels = points). "
        "**cpu**: the cpu engine's table element paired one-to-one with each ground-truth table on the page (a "
        "table it did not find scores 0). **aligned**: the ground-truth table's HTML given to the aligner as if a "
        "model had answered it, one block per table region of the page, aligned to the page's words as the cpu "
        "engine reads them (text layer, or OCR for the PubTabNet images); the box is the union of the words it "
        "matched. **aligned in a whole page**: the same tables inside a whole page's answer (the cpu engine's "
        "other blocks around them, as a model would write the page), so the page's other blocks compete for "
        "the words (a block of the cpu reading that lies in a ground-truth table is replaced by that table, as a "
        "model writes a table's cells once). Goals: cpu ≥ 0.8, aligned ≥ 0.7.", "",
        "| split | tables | cpu mean IoU | cpu tables found | aligned mean IoU | aligned with a box "
        "| aligned in a whole page |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, figures in [*report["splits"].items(), ("all", report["overall"])]:
        lines.append(f"| {name} | {figures['tables']} | {figures['cpu_mean_iou']} | {figures['cpu_found']} | "
                     f"{figures['aligned_mean_iou']} | {figures['aligned_boxed']} | "
                     f"{figures['whole_page_mean_iou']} |")
    worst = sorted(report["tables"], key=lambda row: row["cpu_iou"])[:6]
    lines += ["", "Lowest cpu IoU (a table split in two, or taken with the text around it, scores low):", "",
              "| split | case | page | cpu IoU | aligned IoU |", "|---|---|---|---|---|"]
    lines += [f"| {row['split']} | {row['case_id']} | {row['page']} | {row['cpu_iou']:.3f} | "
              f"{row['aligned_iou']:.3f} |" for row in worst]
    return "\n".join(lines)





def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pagemill_eval.boxes", description=__doc__.split("\n")[0])
    parser.add_argument("corpus_dirs", nargs="+", type=Path)
    parser.add_argument("--json", type=Path, default=None, help="write the per-table report here")
    parser.add_argument("--case", action="append", default=[], help="glob of case ids to keep")
    parser.add_argument("--write", type=Path, default=None, help="put the figures into this Markdown file's "
                                                                  f"`{SECTION}` section (docs/benchmarks.md)")
    args = parser.parse_args(argv)
    report = measure(args.corpus_dirs, patterns=args.case or None)
    print(f"{'case':<34} {'page':>4} {'cpu IoU':>8} {'aligned':>8} {'align':>6}")
    for row in report["tables"]:
        alignment = "-" if row["alignment"] is None else f"{row['alignment']:.2f}"
        print(f"{row['case_id'][:34]:<34} {row['page']:>4} {row['cpu_iou']:>8.3f} {row['aligned_iou']:>8.3f} "
              f"{alignment:>6}")
    for name, figures in [*report["splits"].items(), ("overall", report["overall"])]:
        print(f"{name:<10} tables={figures['tables']} cpu_mean_iou={figures['cpu_mean_iou']} "
              f"aligned_mean_iou={figures['aligned_mean_iou']} whole_page_mean_iou={figures['whole_page_mean_iou']} "
              f"cpu_found={figures['cpu_found']} "
              f"aligned_boxed={figures['aligned_boxed']}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    if args.write:
        shown = " ".join(str(p) for p in args.corpus_dirs)
        command = f"make bench-boxes  # python -m pagemill_eval.boxes {shown}"
        write_section(args.write, markdown_section(report, command), SECTION)
    return 0


if __name__ == "__main__":
    sys.exit(main())
