"""A generated calibration set: born-digital pages whose text layer is the truth, made hard on purpose.

Confidence has to be fitted on bad pages, and dev + wide hold only a handful. Rather than hand-pick more (and tune
on them), this module makes them: it takes the born-digital PDF cases of one or more corpora (`kind` contains
`digital`), picks pages whose text layer holds enough text, keeps that text layer (dot leaders left out, as the
engine leaves them) as the reference, and writes each page again through one of the degradations in
`DEGRADATIONS` — re-rendered at low resolution, blurred, skewed, rotated, noised, its table rules removed (all
image-only: the text layer is dropped), or kept as an image under a wrong text layer (another source page's text,
invisible, as a bad OCR layer would be). The untouched page (`clean`) is written too, so the set holds good pages
as well as bad ones.

With `columns`, the set also holds pages laid out in columns, made from its own source pages: two or three of them,
each cut to the box its ink fills, placed side by side on one wide page as form objects (so their text layer stays
a text layer), the reference their texts one after the other. `columns` keeps the text layer; `columns_scan` is the
same page as a 150-dpi image only. They are what a multi-column page (a reference card, a two-column paper) looks
like, made by construction: no column page of any corpus is copied. They are drawn from a random stream of their own,
so a seed's other cases are the same with or without them.

With `cards`, the set also holds designed reference cards: short entries cut from its own source pages' text, set
in 2 or 3 page columns that share one line pitch and one baseline grid, with bold headings inside the columns and,
on most cards, entries of two parts (a description left, a Courier "syntax" right-aligned to the column's edge).
The reference is the text in column order, as a reader reads a card. `cards` keeps the text layer; `cards_scan` is
the same page as a 150-dpi image only. Their own random stream leaves the seed's other cases alone too. With
`card_headings` above 1 the headings are set that much larger with no blank line before them (a LaTeX card's
section heads); at 1 (the default) the cards are the ones made without it. With `card_tabs` every entry is of two
parts and the syntax stands left-aligned at a tab stop of the column (a column of its own, as a LaTeX tabular card
sets it) instead of right-aligned to the column's edge. With `card_degrade` each `cards_scan` page is written through
one of `CARD_DEGRADATIONS` (low resolution, blur, skew, a quarter or half turn, noise) instead of as a clean 150-dpi
image: the card as OCR reads it off a poor scan. With `card_long_sections` a heading comes every 30-60 entries
instead of every 4-10 (a card whose page columns are each one long section, as asymptote's "path operations").

With `indexes`, the set also holds back-of-book index pages: a title, then 2 or 3 page columns of short entries
(single words or identifiers from its own source pages' text, sorted) under larger bold letter headings with a
blank line above, each entry joined by dot leaders to its page numbers at the column's right edge. Leaders carry no
text, so the reference is the title, then each column's headings and "entry 12, 45" lines in column order.
`indexes` keeps the text layer; `indexes_scan` is the same page as a 150-dpi image only; their own random stream
leaves the seed's other cases alone.

Everything is decided by `random.Random(seed)` over sorted inputs, so the same corpora and seed give the same
set, byte for byte in the references and pixel for pixel in the images. The output is an ordinary eval corpus
(a folder per case, `MANIFEST.tsv`, the reference as `<case>.txt`, tier `[GT:generated]`), so `pagemill eval`
scores it like any other. Nothing here looks at a case by name.
"""

from __future__ import annotations

import csv
import ctypes
import random
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path

import numpy as np
import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
from PIL import Image, ImageFilter

from pagemill_eval.corpus import Case, read_manifest

MIN_REFERENCE_CHARS = 200  # a page with less text layer than this says too little to score
LEADERS = re.compile(r"[ \t]*(?:\.[ \t]*){4,}")  # dot leaders, ". . . . ." or ".....", with the blanks around them
RULE_SHARE = 0.35  # a pixel row/column this dark over this share of its length is a table rule (removed)
MANIFEST_FIELDS = ("file", "source_repo", "source_path", "commit", "license", "kind", "pages",
                   "ground_truth_files", "notes")


@dataclass(frozen=True, slots=True)
class SourcePage:
    """One born-digital page: where it comes from and its text layer (the reference)."""

    corpus: str
    case: Case
    index: int
    text: str


@dataclass(frozen=True, slots=True)
class GeneratedCase:
    case_id: str
    source: SourcePage
    degradation: str
    detail: str
    placed: tuple[SourcePage, ...] = ()  # a column page's sources, left to right (`source` holds their texts)


def _gray(rendered: Image.Image) -> Image.Image:
    return rendered.convert("L")


def _low_res(page: pdfium.PdfPage, rng: random.Random) -> tuple[Image.Image, float, str]:
    dpi = rng.choice((50.0, 60.0, 72.0))
    return _gray(page.render(scale=dpi / 72).to_pil()), dpi, f"dpi={dpi:g}"


def _blur(page: pdfium.PdfPage, rng: random.Random) -> tuple[Image.Image, float, str]:
    radius = rng.choice((1.5, 2.0, 2.5))
    image = _gray(page.render(scale=150 / 72).to_pil()).filter(ImageFilter.GaussianBlur(radius))
    return image, 150.0, f"dpi=150 blur={radius:g}"


def _skew(page: pdfium.PdfPage, rng: random.Random) -> tuple[Image.Image, float, str]:
    angle = rng.choice((-1, 1)) * rng.uniform(2.0, 7.0)
    image = _gray(page.render(scale=150 / 72).to_pil()).rotate(angle, expand=True, fillcolor=255,
                                                                 resample=Image.Resampling.BILINEAR)
    return image, 150.0, f"dpi=150 skew={angle:.2f}"


def _rotate(page: pdfium.PdfPage, rng: random.Random) -> tuple[Image.Image, float, str]:
    quarter = rng.choice((90, 180, 270))
    return _gray(page.render(scale=150 / 72).to_pil()).rotate(quarter, expand=True), 150.0, f"dpi=150 rotate={quarter}"


def _noise(page: pdfium.PdfPage, rng: random.Random) -> tuple[Image.Image, float, str]:
    sigma = rng.choice((40.0, 60.0, 80.0))
    pixels = np.asarray(_gray(page.render(scale=150 / 72).to_pil()), dtype=np.float32)
    noisy = pixels + np.random.default_rng(rng.getrandbits(32)).normal(0.0, sigma, pixels.shape)
    speckle = np.random.default_rng(rng.getrandbits(32)).random(pixels.shape) < 0.02
    noisy[speckle] = 0.0
    return Image.fromarray(np.clip(noisy, 0, 255).astype(np.uint8)), 150.0, f"dpi=150 noise={sigma:g}"


def _no_rules(page: pdfium.PdfPage, rng: random.Random) -> tuple[Image.Image, float, str]:
    del rng  # deterministic: every long horizontal or vertical dark run goes
    pixels = np.asarray(_gray(page.render(scale=150 / 72).to_pil())).copy()
    dark = pixels < 128
    rows = dark.mean(axis=1) > RULE_SHARE
    cols = dark.mean(axis=0) > RULE_SHARE
    pixels[rows, :] = 255
    pixels[:, cols] = 255
    return Image.fromarray(pixels), 150.0, f"dpi=150 rules_removed={int(rows.sum() + cols.sum())}"


Degrade = Callable[[pdfium.PdfPage, random.Random], tuple[Image.Image, float, str]]
DEGRADATIONS: dict[str, Degrade] = {
    "low_res": _low_res, "blur": _blur, "skew": _skew, "rotate": _rotate, "noise": _noise, "no_rules": _no_rules,
}
KINDS = ("clean", *DEGRADATIONS, "wrong_layer")
COLUMN_KINDS = ("columns", "columns_scan")
COLUMN_GUTTERS_PT = (10.0, 18.0, 28.0)  # white space between two placed columns, drawn per page
CARD_KINDS: tuple[str, str] = ("cards", "cards_scan")
CARD_DEGRADATIONS = ("low_res", "blur", "skew", "rotate", "noise")  # a card has no rules to remove
CARD_SOURCES = 6  # source pages whose text a card's entries are cut from, in order
INDEX_KINDS: tuple[str, str] = ("indexes", "indexes_scan")


def source_pages(corpus_dirs: Sequence[Path], *, max_pages_per_case: int, rng: random.Random) -> list[SourcePage]:
    """The born-digital PDF pages of the corpora with at least `MIN_REFERENCE_CHARS` of text layer."""
    pages: list[SourcePage] = []
    for corpus_dir in sorted(corpus_dirs):
        for case in sorted(read_manifest(corpus_dir), key=lambda c: c.case_id):
            if "digital" not in case.kinds or case.input_path.suffix.lower() != ".pdf":
                continue
            try:
                pdf = pdfium.PdfDocument(case.input_path)
            except (pdfium.PdfiumError, OSError):
                continue
            try:
                usable = [(i, text) for i in range(len(pdf)) if len(text := page_text(pdf[i])) >= MIN_REFERENCE_CHARS]
            finally:
                pdf.close()
            for index, text in sorted(rng.sample(usable, min(max_pages_per_case, len(usable)))):
                pages.append(SourcePage(corpus_dir.name, case, index, text))
    return pages


def without_leaders(text: str) -> str:
    """`text` with every run of four or more dots (spaced or not: a table of contents' leaders) made one space."""
    return LEADERS.sub(" ", text)


def page_text(page: pdfium.PdfPage) -> str:
    """The page's text layer as a reference: its lines, trailing blanks and dot leaders left out (leaders carry no
    text, and the engine drops them, `textchars.drop_leaders`; a reference holding them scores every leader dot
    of a table of contents read right as a miss)."""
    textpage = page.get_textpage()
    try:
        text = textpage.get_text_range()
    finally:
        textpage.close()
    lines = without_leaders(text.replace("\r\n", "\n")).split("\n")
    return "\n".join(line.rstrip() for line in lines).strip()


def plan(pages: Sequence[SourcePage], *, kinds_per_page: int, rng: random.Random) -> list[GeneratedCase]:
    """Each source page gets `clean` plus `kinds_per_page - 1` degradations drawn without replacement."""
    cases: list[GeneratedCase] = []
    for number, source in enumerate(pages):
        drawn = ["clean", *rng.sample(KINDS[1:], min(kinds_per_page - 1, len(KINDS) - 1))]
        for kind in drawn:
            stem = f"gen{number:03d}_{kind}"
            cases.append(GeneratedCase(stem, source, kind, ""))
    return cases


def plan_columns(pages: Sequence[SourcePage], *, count: int, rng: random.Random) -> list[GeneratedCase]:
    """`count` column pages, each of 2 or 3 distinct source pages drawn by `rng`, alternately with and without
    their text layer (`columns`, `columns_scan`)."""
    if len(pages) < 2:
        return []
    cases: list[GeneratedCase] = []
    for number in range(count):
        group = rng.sample(list(pages), min(len(pages), rng.choice((2, 3))))
        kind = COLUMN_KINDS[number % len(COLUMN_KINDS)]
        text = "\n\n".join(page.text for page in group)
        joined = SourcePage(group[0].corpus, group[0].case, group[0].index, text)
        detail = "from=" + ",".join(f"{p.corpus}/{p.case.case_id}#{p.index + 1}" for p in group)
        cases.append(GeneratedCase(f"col{number:03d}_{kind}", joined, kind, detail, tuple(group)))
    return cases


def plan_laid_out(pages: Sequence[SourcePage], *, count: int, rng: random.Random, kinds: tuple[str, str],
                  stem: str) -> list[GeneratedCase]:
    """`count` pages laid out from words (reference cards: `CARD_KINDS`, "card"; index pages: `INDEX_KINDS`,
    "index"), each cut from up to `CARD_SOURCES` distinct source pages drawn by `rng`, alternately with and without
    their text layer (`kinds`); the text is laid out when written."""
    if not pages:
        return []
    cases: list[GeneratedCase] = []
    for number in range(count):
        group = rng.sample(list(pages), min(len(pages), CARD_SOURCES))
        kind = kinds[number % len(kinds)]
        detail = "from=" + ",".join(f"{p.corpus}/{p.case.case_id}#{p.index + 1}" for p in group)
        cases.append(GeneratedCase(f"{stem}{number:03d}_{kind}", group[0], kind, detail, tuple(group)))
    return cases


def write_set(corpus_dirs: Sequence[Path], out_dir: Path, *, seed: int = 28, max_pages_per_case: int = 1,
              kinds_per_page: int = 3, max_sources: int | None = 16, columns: int = 0,
              cards: int = 0, card_headings: float = 1.0, card_tabs: bool = False, card_degrade: bool = False,
              card_long_sections: bool = False, card_wordy: bool = False,
              indexes: int = 0) -> list[GeneratedCase]:
    """Generate the set into `out_dir` (created); returns the cases written, in manifest order. `card_headings`:
    the cards' headings this many times their entries' size; `card_tabs`: their syntax at a tab stop
    (`_write_card`); `card_degrade`: their image-only pages degraded (`CARD_DEGRADATIONS`); `card_long_sections`:
    a heading every 30-60 entries, not 4-10; `card_wordy`: descriptions of 5-9 words."""
    rng = random.Random(seed)
    pages = source_pages(corpus_dirs, max_pages_per_case=max_pages_per_case, rng=rng)
    if max_sources is not None and len(pages) > max_sources:
        pages = sorted(rng.sample(pages, max_sources), key=lambda p: (p.corpus, p.case.case_id, p.index))
    cases = plan(pages, kinds_per_page=kinds_per_page, rng=rng)
    cases += plan_columns(pages, count=columns, rng=random.Random(f"{seed}/columns"))
    cases += plan_laid_out(pages, count=cards, rng=random.Random(f"{seed}/cards"), kinds=CARD_KINDS, stem="card")
    cases += plan_laid_out(pages, count=indexes, rng=random.Random(f"{seed}/indexes"), kinds=INDEX_KINDS,
                           stem="index")
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[GeneratedCase] = []
    rows: list[dict[str, str]] = []
    for case in cases:
        folder = out_dir / case.case_id
        folder.mkdir(exist_ok=True)
        case_rng = random.Random(f"{seed}/{case.case_id}")
        source = case.source
        if case.degradation in CARD_KINDS or case.degradation in INDEX_KINDS:
            target = folder / f"{case.case_id}.pdf"
            layout, text = (_write_card(case, target, case_rng, card_headings, card_tabs, card_degrade,
                                        card_long_sections, card_wordy)
                            if case.degradation in CARD_KINDS
                            else _write_index(case, target, case_rng))
            detail = f"{layout} {case.detail}"
            source = SourcePage(source.corpus, source.case, source.index, text)
        elif case.placed:
            detail = f"{_write_columns(case, folder / f'{case.case_id}.pdf', case_rng)} {case.detail}"
        else:
            detail = _write_pdf(case, pages, folder / f"{case.case_id}.pdf", case_rng)
        (folder / f"{case.case_id}.txt").write_text(source.text + "\n", encoding="utf-8")
        done = GeneratedCase(case.case_id, source, case.degradation, detail, case.placed)
        written.append(done)
        rows.append(_manifest_row(done))
    with (out_dir / "MANIFEST.tsv").open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=MANIFEST_FIELDS, delimiter="\t", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return written


def _manifest_row(case: GeneratedCase) -> dict[str, str]:
    source = case.source
    kind = ("digital" if case.degradation in ("clean", "columns", "cards", "indexes") else
            "scan,layer" if case.degradation == "wrong_layer" else "scan")
    return {
        "file": f"{case.case_id}/{case.case_id}.pdf", "source_repo": "generated",
        "source_path": f"{source.corpus}/{source.case.input_path.relative_to(source.case.folder.parent)}",
        "commit": "-", "license": "see source case", "kind": f"generated,{case.degradation},{kind}", "pages": "1",
        "ground_truth_files": f"{case.case_id}/{case.case_id}.txt",
        "notes": f"[GT:generated] page {source.index + 1} of {source.corpus}/{source.case.case_id}, "
                 f"{case.degradation} {case.detail}".rstrip(),
    }


def _write_pdf(case: GeneratedCase, pages: Sequence[SourcePage], path: Path, rng: random.Random) -> str:
    source = case.source
    pdf = pdfium.PdfDocument(source.case.input_path)
    try:
        if case.degradation == "clean":
            single = pdfium.PdfDocument.new()
            single.import_pages(pdf, [source.index])
            single.save(path)
            single.close()
            return ""
        page = pdf[source.index]
        if case.degradation == "wrong_layer":
            others = [p for p in pages if p is not source] or [source]
            wrong = rng.choice(others)
            image = _gray(page.render(scale=150 / 72).to_pil())
            _image_pdf(image, 150.0, path, hidden_text=wrong.text)
            return f"dpi=150 layer_from={wrong.corpus}/{wrong.case.case_id}#{wrong.index + 1}"
        image, dpi, detail = DEGRADATIONS[case.degradation](page, rng)
        _image_pdf(image, dpi, path, hidden_text=None)
        return detail
    finally:
        pdf.close()


def _ink_box(page: pdfium.PdfPage) -> tuple[float, float, float, float]:
    """(left, bottom, right, top) in PDF points of what the page shows (a 36-dpi rendering's non-white pixels);
    the whole page when it is blank."""
    width, height = page.get_size()
    scale = 0.5
    pixels = np.asarray(_gray(page.render(scale=scale).to_pil())) < 224
    rows, cols = np.flatnonzero(pixels.any(axis=1)), np.flatnonzero(pixels.any(axis=0))
    if not len(rows):
        return 0.0, 0.0, width, height
    pad = 2.0
    left, right = max(0.0, cols[0] / scale - pad), min(width, (cols[-1] + 1) / scale + pad)
    top, bottom = max(0.0, rows[0] / scale - pad), min(height, (rows[-1] + 1) / scale + pad)
    return left, height - bottom, right, height - top


def _write_columns(case: GeneratedCase, path: Path, rng: random.Random) -> str:
    """The case's source pages cut to their ink and placed side by side, tops aligned, as form objects."""
    gutter = rng.choice(COLUMN_GUTTERS_PT)
    margin = 36.0
    sources = [pdfium.PdfDocument(page.case.input_path) for page in case.placed]
    out = pdfium.PdfDocument.new()
    try:
        boxes = [_ink_box(pdf[page.index]) for pdf, page in zip(sources, case.placed, strict=True)]
        width = 2 * margin + sum(r - le for le, _, r, _ in boxes) + gutter * (len(boxes) - 1)
        height = 2 * margin + max(t - b for _, b, _, t in boxes)
        target = out.new_page(width, height)
        x = margin
        for pdf, page, (left, _bottom, right, top) in zip(sources, case.placed, boxes, strict=True):
            placed = pdf.page_as_xobject(page.index, out).as_pageobject()
            # the ink box's top-left corner goes to (x, height - margin)
            placed.transform(pdfium.PdfMatrix().translate(x - left, height - margin - top))
            target.insert_obj(placed)
            x += right - left + gutter
        target.gen_content()
        if case.degradation == "columns":
            out.save(path)
            return f"gutter={gutter:g}pt"
        image = _gray(target.render(scale=150 / 72).to_pil())
        _image_pdf(image, 150.0, path, hidden_text=None)
        return f"dpi=150 gutter={gutter:g}pt"
    finally:
        out.close()
        for pdf in sources:
            pdf.close()


class _Words:
    """The words of a card's source pages, in reading order, handed out a few at a time (NFKC, Latin-1 only: the
    standard PDF fonts draw nothing else, and the reference must hold only what the page shows; lines mostly of
    figures left out)."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.words: list[str] = []
        for line in unicodedata.normalize("NFKC", "\n".join(texts)).split("\n"):
            words = [word for word in line.split() if word.isprintable() and all(ord(char) < 256 for char in word)]
            if 2 * sum(any(char.isalpha() for char in word) for word in words) >= len(words):
                self.words += words  # lines of words, as a card's entries are: a table's rows of figures are not
        self.next = 0

    def take(self, count: int) -> list[str]:
        taken = self.words[self.next:self.next + count]
        self.next += len(taken)
        return taken


class _CardPage:
    """A new page and the standard fonts a card is set in; `place` draws one line and says how wide it is."""

    FONTS = {"text": b"Helvetica", "heading": b"Helvetica-Bold", "syntax": b"Courier"}

    def __init__(self, width: float, height: float, size: float) -> None:
        self.pdf = pdfium.PdfDocument.new()
        self.page = self.pdf.new_page(width, height)
        self.size = size
        self.fonts = {name: pdfium_c.FPDFText_LoadStandardFont(self.pdf.raw, font) for name, font in self.FONTS.items()}

    def line(self, font: str, text: str, size: float | None = None) -> tuple[ctypes.c_void_p, float]:
        obj = pdfium_c.FPDFPageObj_CreateTextObj(self.pdf.raw, self.fonts[font], ctypes.c_float(size or self.size))
        encoded = ctypes.create_string_buffer((text + "\x00").encode("utf-16-le"))
        pdfium_c.FPDFText_SetText(obj, ctypes.cast(encoded, ctypes.POINTER(pdfium_c.FPDF_WCHAR)))
        left, bottom, right, top = (ctypes.c_float() for _ in range(4))
        pdfium_c.FPDFPageObj_GetBounds(obj, left, bottom, right, top)
        return obj, right.value

    def fitted(self, font: str, words: list[str], room: float,
               size: float | None = None) -> tuple[ctypes.c_void_p, float, str] | None:
        """The longest head of `words` that fits in `room` points, as an unplaced text object (at `size`, else the
        card's)."""
        while words:
            text = " ".join(words)
            obj, width = self.line(font, text, size)
            if width <= room:
                return obj, width, text
            pdfium_c.FPDFPageObj_Destroy(obj)
            words = words[:-1]
        return None

    def place(self, obj: ctypes.c_void_p, x: float, baseline: float) -> None:
        pdfium_c.FPDFPageObj_Transform(obj, 1, 0, 0, 1, ctypes.c_double(x), ctypes.c_double(baseline))
        pdfium_c.FPDFPage_InsertObject(self.page.raw, obj)

    def save(self, path: Path, *, text_layer: bool, layout: str, degrade: random.Random | None = None) -> str:
        """Write the page to `path` as made (its text layer kept) or as an image only: at 150 dpi, or with `degrade`
        through one of `CARD_DEGRADATIONS` it draws; returns `layout`, with the image's making when an image."""
        pdfium_c.FPDFPage_GenerateContent(self.page.raw)
        if text_layer:
            self.pdf.save(path)
            return layout
        if degrade is None:
            _image_pdf(_gray(self.page.render(scale=150 / 72).to_pil()), 150.0, path, hidden_text=None)
            return f"dpi=150 {layout}"
        kind = degrade.choice(CARD_DEGRADATIONS)
        image, dpi, made = DEGRADATIONS[kind](self.page, degrade)
        _image_pdf(image, dpi, path, hidden_text=None)
        return f"{kind} {made} {layout}"

    def close(self) -> None:
        for font in self.fonts.values():
            pdfium_c.FPDFFont_Close(font)
        self.pdf.close()


def _write_card(case: GeneratedCase, path: Path, rng: random.Random,
                heading_scale: float = 1.0, tabs: bool = False, degrade: bool = False,
                long_sections: bool = False, wordy: bool = False) -> tuple[str, str]:
    """A reference card cut from the case's source pages; returns its parameters and its text in column order.

    `heading_scale` above 1 sets the headings that many times the entries' size, with no blank line before them
    and the lines under them moved down by the extra height (as a LaTeX card's section heads); at 1 they are the
    entries' size, about half of them under a blank grid line. `tabs`: every entry is a description and its syntax,
    the syntax left-aligned at a tab stop 50-65% across the column (a tabular's second column), not right-aligned
    to the column's edge. `degrade`: an image-only card is degraded (`_CardPage.save`), by draws after its layout's.
    `long_sections`: a heading every 30-60 entries instead of every 4-10 (the layout drawn before it the same).
    `wordy`: descriptions of 5-9 words instead of 2-6, a tab stop 65-80% across (as asymptote's card, whose
    descriptions are short sentences: "number of segments in path p"); the draws are the same."""
    columns = rng.choice((2, 3))
    width, height = (792.0, 612.0) if columns == 3 else (612.0, 792.0)
    size = rng.choice((7.0, 8.0, 9.0))
    pitch = round(size * rng.choice((1.15, 1.25, 1.35)), 2)
    gutter = rng.choice((14.0, 20.0, 28.0))
    two_parts = rng.random() < 0.75 or tabs  # most cards pair a description with its syntax, some list plain entries
    margin = 36.0
    column_width = (width - 2 * margin - gutter * (columns - 1)) / columns
    low, high = (0.65, 0.8) if wordy else (0.5, 0.65)
    tab = round(rng.uniform(low, high) * column_width, 1) if tabs else None  # the syntax's stop, from the left
    rows = int((height - 2 * margin - size) // pitch) + 1
    words = _Words([page.text for page in case.placed])
    card = _CardPage(width, height, size)
    larger = heading_scale > 1.0
    texts: list[list[str]] = []
    try:
        until_heading = 0
        for column in range(columns):
            left = margin + column * (column_width + gutter)
            right = left + column_width
            lines: list[str] = []
            drop = 0.0  # how far larger headings above have moved this column's lines down
            for row in range(rows):
                baseline = height - margin - size - row * pitch - drop
                if baseline < margin:
                    break
                if until_heading == 0:
                    if 0 < row < rows - 1 and lines[-1:] != [""] and rng.random() < 0.5 and not larger:
                        lines.append("")  # a blank grid line before the heading: the grid is kept
                        continue
                    heading = card.fitted("heading", words.take(rng.randint(1, 3)), column_width,
                                          heading_scale * size)
                    until_heading = rng.randint(30, 60) if long_sections else rng.randint(4, 10)
                    if heading is not None:
                        extra = (heading_scale - 1.0) * size
                        card.place(heading[0], left, baseline - extra)
                        drop += extra
                        lines.append(heading[2])
                    continue
                until_heading -= 1
                if tab is not None or (two_parts and rng.random() < 0.85):
                    syntax = card.fitted("syntax", words.take(rng.randint(1, 3)),
                                         column_width / 2 if tab is None else column_width - tab)
                    stop = column_width - (syntax[1] if syntax else 0.0) if tab is None else tab  # the syntax's start
                    description = card.fitted("text", words.take(rng.randint(5, 9) if wordy else rng.randint(2, 6)),
                                              stop - size)
                    parts = [part for part in (description, syntax) if part is not None]
                    if description is not None:
                        card.place(description[0], left, baseline)
                    if syntax is not None:
                        card.place(syntax[0], right - syntax[1] if tab is None else left + tab, baseline)
                else:
                    entry = card.fitted("text", words.take(rng.randint(3, 8)), column_width)
                    parts = [entry] if entry is not None else []
                    if entry is not None:
                        card.place(entry[0], left, baseline)
                if parts:
                    lines.append(" ".join(part[2] for part in parts))
            texts.append(lines)
        layout = f"columns={columns} size={size:g}pt pitch={pitch:g}pt gutter={gutter:g}pt two_parts={int(two_parts)}"
        if tab is not None:
            layout += f" tab={tab:g}pt"
        if larger:
            layout += f" headings={heading_scale:g}x"
        if long_sections:
            layout += " sections=long"
        if wordy:
            layout += " descriptions=wordy"
        layout = card.save(path, text_layer=case.degradation == "cards", layout=layout,
                           degrade=rng if degrade else None)
    finally:
        card.close()
    return layout, _column_order(texts)


def _index_entries(words: _Words, rng: random.Random, count: int) -> list[str]:
    """`count` index entries from the source words, sorted as an index is: words or identifiers (two words joined
    by an underscore), letters first, each once."""
    entries: dict[str, str] = {}
    while len(entries) < count:
        taken = [word.strip(".,;:()[]{}\"'!?") for word in words.take(2)]
        if len(taken) < 2:
            break
        first, second = taken
        if len(first) < 3 or not first[0].isalpha():
            continue
        entry = f"{first}_{second}" if second.isalnum() and rng.random() < 0.3 else first
        entries.setdefault(entry.casefold(), entry)
    return [entries[key] for key in sorted(entries)]


def _write_index(case: GeneratedCase, path: Path, rng: random.Random) -> tuple[str, str]:
    """A back-of-book index page cut from the case's source pages; returns its parameters and its text in column
    order (leaders left out: they carry no text)."""
    columns = rng.choice((2, 2, 3))
    width, height = 612.0, 792.0
    margin = rng.choice((54.0, 72.0))
    size = rng.choice((7.0, 8.0, 9.0))
    pitch = round(size * rng.choice((1.15, 1.25, 1.35)), 2)
    gutter = rng.choice((14.0, 20.0, 28.0))
    letters = rng.choice((1.2, 1.44, 1.73))  # the letter headings' size, in entries' sizes
    font = rng.choice(("syntax", "text"))  # identifiers in Courier, or words in Helvetica
    column_width = (width - 2 * margin - gutter * (columns - 1)) / columns
    words = _Words([page.text for page in case.placed])
    density = rng.choice((0.35, 0.6, 1.0))  # a long book's index covers a letter a page, a short one many
    entries = [entry for entry in _index_entries(words, rng, 400) if rng.random() < density]
    card = _CardPage(width, height, size)
    texts: list[list[str]] = []
    try:
        title = card.fitted("heading", words.take(rng.randint(1, 3)), width - 2 * margin, 2 * size)
        top = height - margin - 2 * size
        if title is not None:
            card.place(title[0], margin, top)
            texts.append([title[2]])
        top -= 3 * pitch
        ten = card.line("text", "." * 10)
        pdfium_c.FPDFPageObj_Destroy(ten[0])
        dot = ten[1] / 10  # a leader dot's advance
        last = rng.randint(len(entries) // 2, len(entries)) if rng.random() < 0.5 else len(entries)
        letter = ""
        taken = 0
        for column in range(columns):
            left = margin + column * (column_width + gutter)
            right = left + column_width
            lines: list[str] = []
            baseline = top
            while taken < last:
                entry = entries[taken]
                initial = entry[0].upper()
                if initial != letter:
                    extra = (letters - 1.0) * size
                    needed = (2 * pitch if lines else 0.0) + extra + 2 * pitch
                    if baseline - needed < margin:
                        break
                    if lines:
                        lines.append("")
                        baseline -= pitch  # a blank line above the letter
                    heading = card.line("heading", initial, letters * size)
                    card.place(heading[0], left, baseline - extra)
                    lines.append(initial)
                    baseline -= pitch + extra
                    letter = initial
                    continue
                if baseline < margin:
                    break
                numbers = ", ".join(str(n) for n in sorted(rng.sample(range(1, 400), rng.choice((1, 1, 1, 2, 3)))))
                figure = card.line("text", numbers)
                label = card.fitted(font, entry.split(), column_width - figure[1] - 6 * dot)
                taken += 1
                if label is None:
                    pdfium_c.FPDFPageObj_Destroy(figure[0])
                    continue
                card.place(label[0], left, baseline)
                card.place(figure[0], right - figure[1], baseline)
                room = right - figure[1] - left - label[1] - 2 * dot
                leader = card.line("text", "." * int(room / dot))
                card.place(leader[0], right - figure[1] - dot - leader[1], baseline)
                lines.append(f"{label[2]} {numbers}")
                baseline -= pitch
            if lines:
                texts.append(lines)
        layout = (f"columns={columns} size={size:g}pt pitch={pitch:g}pt gutter={gutter:g}pt letters={letters:g}x "
                  f"density={density:g} font={'Courier' if font == 'syntax' else 'Helvetica'}")
        layout = card.save(path, text_layer=case.degradation == "indexes", layout=layout)
    finally:
        card.close()
    return layout, _column_order(texts)


def _column_order(texts: Sequence[Sequence[str]]) -> str:
    """A laid-out page's reference: each column's lines, a blank line between columns (empty columns left out)."""
    text = "\n\n".join("\n".join(lines).strip("\n") for lines in texts if any(lines))
    return "\n".join(line.strip() for line in text.split("\n"))


def _image_pdf(image: Image.Image, dpi: float, path: Path, *, hidden_text: str | None) -> None:
    """A one-page PDF showing `image`; with `hidden_text`, an invisible text layer (as OCR'd scans carry) too."""
    buffer = BytesIO()
    image.save(buffer, format="PDF", resolution=dpi)
    if hidden_text is None:
        path.write_bytes(buffer.getvalue())
        return
    pdf = pdfium.PdfDocument(buffer.getvalue())
    try:
        page = pdf[0]
        height = page.get_size()[1]
        lines = [line for line in hidden_text.split("\n") if line.strip()] or [hidden_text]
        size = max(4.0, min(12.0, (height - 72) / max(1, len(lines))))
        font = pdfium_c.FPDFText_LoadStandardFont(pdf.raw, b"Helvetica")
        for number, line in enumerate(lines):
            obj = pdfium_c.FPDFPageObj_CreateTextObj(pdf.raw, font, ctypes.c_float(size))
            encoded = ctypes.create_string_buffer((line + "\x00").encode("utf-16-le"))
            pdfium_c.FPDFText_SetText(obj, ctypes.cast(encoded, ctypes.POINTER(pdfium_c.FPDF_WCHAR)))
            pdfium_c.FPDFTextObj_SetTextRenderMode(obj, pdfium_c.FPDF_TEXTRENDERMODE_INVISIBLE)
            y = height - 36 - (number + 1) * size
            pdfium_c.FPDFPageObj_Transform(obj, 1, 0, 0, 1, ctypes.c_double(36.0), ctypes.c_double(max(0.0, y)))
            pdfium_c.FPDFPage_InsertObject(page.raw, obj)
        pdfium_c.FPDFPage_GenerateContent(page.raw)
        pdfium_c.FPDFFont_Close(font)
        pdf.save(path)
    finally:
        pdf.close()


def describe(cases: Sequence[GeneratedCase]) -> str:
    """One line: how many cases of each kind, from how many source pages."""
    counts = {kind: sum(1 for c in cases if c.degradation == kind)
              for kind in (*KINDS, *COLUMN_KINDS, *CARD_KINDS, *INDEX_KINDS)}
    sources = len({(c.source.corpus, c.source.case.case_id, c.source.index) for c in cases})
    shown = ", ".join(f"{kind} {count}" for kind, count in counts.items() if count)
    return f"{len(cases)} cases from {sources} source pages ({shown})"


__all__ = ["CARD_DEGRADATIONS", "CARD_KINDS", "COLUMN_KINDS", "DEGRADATIONS", "INDEX_KINDS", "KINDS", "GeneratedCase",
           "SourcePage", "describe", "write_set"]
