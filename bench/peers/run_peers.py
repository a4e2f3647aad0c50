"""Runs one CPU peer over a corpus and saves each case's Markdown as `OUT/<case>.json` for `pagemill eval`.

Runs inside the peers' own venv (.venv-peers, bench/peers/requirements.txt): it imports nothing from pagemill.
Each file is `{"pages": [markdown per page], "seconds": parse time, "failed_pages": 0, "error": null}`; a peer
that returns one block for the whole document writes a single page.

    .venv-peers/bin/python bench/peers/run_peers.py --peer pymupdf4llm --corpus CORPUS_DIR --out DIR
"""

from __future__ import annotations

import argparse
import csv
import fnmatch
import io
import json
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".tif", ".tiff", ".webp"}
OCR_DPI = 200  # the same render resolution pagemill's cpu engine uses for OCR


def pdf_pages_as_images(path: Path) -> list[object]:
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(str(path))
    try:
        return [document[i].render(scale=OCR_DPI / 72).to_pil() for i in range(len(document))]
    finally:
        document.close()


def png_copy(path: Path, workdir: Path) -> Path:
    """A PNG of an image pymupdf4llm skips (WebP, TIFF): the corpus's lossless `.png` beside it, else a new one."""
    if path.suffix.lower() in (".png", ".jpg", ".jpeg"):
        return path
    sibling = path.with_suffix(".png")
    if sibling.is_file():
        return sibling
    from PIL import Image

    target = workdir / f"{path.stem}.png"
    Image.open(path).convert("RGB").save(target)
    return target


# --- the peers: path in, Markdown per page out -----------------------------------------------------------

def run_pypdfium2(path: Path, workdir: Path) -> list[str]:
    """pypdfium2's plain text layer, page by page (images have none)."""
    if path.suffix.lower() in IMAGE_SUFFIXES:
        return [""]
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(str(path))
    try:
        pages = []
        for index in range(len(document)):
            text_page = document[index].get_textpage()
            pages.append(text_page.get_text_range().replace("\r\n", "\n").replace("\r", "\n"))
            text_page.close()
        return pages
    finally:
        document.close()


def run_pymupdf4llm(path: Path, workdir: Path) -> list[str]:
    import pymupdf4llm

    source = png_copy(path, workdir) if path.suffix.lower() in IMAGE_SUFFIXES else path
    chunks = pymupdf4llm.to_markdown(str(source), page_chunks=True, show_progress=False)
    return [str(chunk.get("text", "")) for chunk in chunks] if isinstance(chunks, list) else [str(chunks)]


_markitdown = None


def run_markitdown(path: Path, workdir: Path) -> list[str]:
    global _markitdown
    from markitdown import MarkItDown

    if _markitdown is None:
        _markitdown = MarkItDown(enable_plugins=False)
    return [_markitdown.convert(str(path)).text_content or ""]


def _offline_spacy() -> None:
    """unstructured 0.27 downloads a spaCy model on first use, and returns nothing when it cannot (no network
    here): its loader is replaced by a blank English pipeline with a rule-based sentencizer."""
    import spacy
    from unstructured.nlp import tokenize

    blank = spacy.blank("en")
    blank.add_pipe("sentencizer")
    tokenize._get_nlp = lambda: blank  # the documented workaround for offline use


def run_unstructured(path: Path, workdir: Path) -> list[str]:
    """partition_pdf(strategy="fast"), called directly: `partition()` insists on unstructured-inference (the
    [pdf] extra, which pulls CUDA torch, ~7 GB) even though the fast strategy never uses it."""
    if path.suffix.lower() in IMAGE_SUFFIXES:
        raise ValueError("unstructured's fast strategy is not available for image files")
    from unstructured.partition.pdf import partition_pdf

    elements = partition_pdf(filename=str(path), strategy="fast")
    pages: dict[int, list[str]] = {}
    for element in elements:
        number = getattr(element.metadata, "page_number", None) or 1
        html = getattr(element.metadata, "text_as_html", None)
        category = getattr(element, "category", "")
        if category == "Table" and html:
            text = html
        elif category == "Title":
            text = f"## {element.text}"
        elif category == "ListItem":
            text = f"- {element.text}"
        else:
            text = element.text
        pages.setdefault(number, []).append(text)
    count = max(pages) if pages else 1
    return ["\n\n".join(pages.get(n, [])) for n in range(1, count + 1)]


_rapidocr = None


def run_rapidocr(path: Path, workdir: Path) -> list[str]:
    """RapidOCR's recognized lines, top to bottom, one per line: every page rendered at 200 dpi."""
    global _rapidocr
    import numpy as np
    from PIL import Image
    from rapidocr import RapidOCR

    if _rapidocr is None:
        _rapidocr = RapidOCR(params={"Global.log_level": "error"})
    if path.suffix.lower() in IMAGE_SUFFIXES:
        images: list[object] = [Image.open(path).convert("RGB")]
    else:
        images = pdf_pages_as_images(path)
    pages = []
    for image in images:
        result = _rapidocr(np.asarray(image))
        texts = list(result.txts or ())
        boxes = list(result.boxes) if result.boxes is not None else []
        lines = sorted(zip(boxes, texts, strict=True), key=lambda item: (float(np.min(np.asarray(item[0])[:, 1])),
                                                                          float(np.min(np.asarray(item[0])[:, 0]))))
        pages.append("\n".join(text for _, text in lines))
    return pages


PEERS: dict[str, Callable[[Path, Path], list[str]]] = {
    "pypdfium2": run_pypdfium2,
    "pymupdf4llm": run_pymupdf4llm,
    "markitdown": run_markitdown,
    "unstructured": run_unstructured,
    "rapidocr": run_rapidocr,
}


def read_cases(corpus: Path, patterns: list[str]) -> list[tuple[str, Path]]:
    with (corpus / "MANIFEST.tsv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    cases = [(Path(row["file"]).parts[0], corpus / row["file"]) for row in rows]
    return [c for c in cases if not patterns or any(fnmatch.fnmatch(c[0], p) for p in patterns)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--peer", required=True, choices=sorted(PEERS))
    parser.add_argument("--corpus", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--cases", action="append", default=[])
    args = parser.parse_args()
    if args.peer == "unstructured":
        _offline_spacy()
    convert = PEERS[args.peer]
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        for case_id, path in read_cases(args.corpus, args.cases):
            started = time.perf_counter()
            error = None
            pages: list[str] = []
            try:
                captured = io.StringIO()
                stdout, sys.stdout = sys.stdout, captured  # some peers print progress to stdout
                try:
                    pages = convert(path, Path(scratch))
                finally:
                    sys.stdout = stdout
            except Exception as exc:  # noqa: BLE001 - a peer failing on a case is a result, not a crash
                error = f"{type(exc).__name__}: {exc}"
                traceback.print_exc(limit=2, file=sys.stderr)
            seconds = time.perf_counter() - started
            record = {"pages": pages, "seconds": round(seconds, 4), "failed_pages": 0, "error": error}
            (args.out / f"{case_id}.json").write_text(json.dumps(record, ensure_ascii=False), encoding="utf-8")
            print(f"{args.peer:<13} {case_id:<50} {seconds:7.2f}s {'FAILED ' + error if error else 'ok'}",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
