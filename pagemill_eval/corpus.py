"""An evaluation corpus: a folder per case, input and ground truth side by side, described by MANIFEST.tsv.

Which ground-truth file scores what is decided here, from the file names and the tier tag that opens the
manifest's `notes` column (`[GT:human]`, `[GT:tool-ref]`, ...); docs/evaluation.md lists the rules.
"""

from __future__ import annotations

import csv
import fnmatch
import re
from dataclasses import dataclass, field
from pathlib import Path

from pagemill_eval.tex_tables import tex_tables
from services.core.errors import PagemillError
from services.core.pdf import inspect_document

RULES_SUFFIX = ".olmocr_tests.jsonl"
TABLES_SUFFIX = ".derived.tables.html"
# Ground-truth files that are not a text reference: structures, regions, sources of another shape.
_NOT_TEXT = (".json", ".xml", ".tex", ".uzn", ".jsonl", TABLES_SUFFIX)
_TIER = re.compile(r"^\[GT:([^\]]*)\]")
_HTML_TABLE = re.compile(r"<table\b.*?</table>", re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True, slots=True)
class TextReference:
    path: Path
    zones: bool = False  # UNLV: the text covers only the zones listed in a `.uzn` file next to it


@dataclass(frozen=True, slots=True)
class Case:
    case_id: str
    folder: Path
    input_path: Path
    kinds: tuple[str, ...]
    pages: str
    ground_truth: tuple[Path, ...]
    notes: str = ""
    tier: str = "none"
    png_variant: Path | None = None  # lossless PNG next to a TIFF input, for parsers without TIFF support
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def noisy(self) -> bool:
        return "NOISY" in self.tier.upper()

    @property
    def rules_path(self) -> Path | None:
        return next((p for p in self.ground_truth if p.name.endswith(RULES_SUFFIX)), None)

    def text_reference(self) -> TextReference | None:
        """The file text similarity is measured against, or None when the case has no usable one.

        A reference the manifest calls NOISY is not used; `X.gold.txt` wins over `X.txt`, and `.txt` over `.md`.
        A LaTeX source is never a text reference (macros and math source are not the text a reader sees), and
        in a `[GT:source]` case only the source itself counts: a `.txt` beside a `.tex` is another tool's
        extraction (pypdf's, in layout order, which interleaves the columns of a two-column page).
        """
        if self.noisy:
            return None
        allowed = (".md", ".html") if self.tier.startswith("source") else (".txt", ".md", ".html")
        candidates = [p for p in self.ground_truth if p.suffix in allowed and not p.name.endswith(_NOT_TEXT)]
        if not candidates:
            return None
        gold = [p for p in candidates if p.name.endswith(".gold.txt")]
        chosen = gold[0] if gold else sorted(candidates, key=lambda p: (p.suffix != ".txt", p.name))[0]
        zones = any(p.suffix == ".uzn" for p in self.ground_truth)
        return TextReference(chosen, zones=zones)

    def table_references(self) -> list[str]:
        """Ground-truth HTML tables: the `*.derived.tables.html` file, else, in a `[GT:source]` case, the tables of
        its HTML/Markdown source or the `tabular` environments of its LaTeX source."""
        derived = [p for p in self.ground_truth if p.name.endswith(TABLES_SUFFIX)]
        if derived:
            return _HTML_TABLE.findall(derived[0].read_text(encoding="utf-8"))
        if self.tier.startswith("source"):
            tables: list[str] = []
            for path in self.ground_truth:
                if path.suffix in (".md", ".html"):
                    tables.extend(_HTML_TABLE.findall(path.read_text(encoding="utf-8")))
                elif path.suffix == ".tex":
                    tables.extend(tex_tables(path.read_text(encoding="utf-8", errors="replace")))
            return tables
        return []

    @property
    def page_count(self) -> int:
        """The document's pages: the manifest's count, else what the file says (0 when it cannot be opened)."""
        leading = re.match(r"\s*(\d+)", self.pages)
        if leading:
            return int(leading.group(1))
        try:
            return inspect_document(self.input_path.read_bytes()).page_count
        except (PagemillError, OSError):
            return 0


def read_manifest(corpus_dir: Path) -> list[Case]:
    manifest = corpus_dir / "MANIFEST.tsv"
    if not manifest.is_file():
        raise FileNotFoundError(f"{manifest} is missing: a corpus folder needs a MANIFEST.tsv")
    cases: list[Case] = []
    with manifest.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            relative = Path(row["file"])
            folder = corpus_dir / relative.parts[0]
            gt_field = (row.get("ground_truth_files") or "-").strip()
            ground_truth = tuple(corpus_dir / p for p in gt_field.split(";") if p and p != "-")
            notes = row.get("notes") or ""
            tier_match = _TIER.match(notes.strip())
            input_path = corpus_dir / relative
            png = input_path.with_suffix(".png")
            cases.append(Case(
                case_id=relative.parts[0], folder=folder, input_path=input_path,
                kinds=tuple(k.strip() for k in (row.get("kind") or "").split(",") if k.strip()),
                pages=(row.get("pages") or "").strip(), ground_truth=ground_truth, notes=notes,
                tier=tier_match.group(1).strip() if tier_match else "none",
                png_variant=png if input_path.suffix.lower() in (".tif", ".tiff") and png.is_file() else None,
            ))
    return cases


def load_cases(corpus_dir: Path, patterns: list[str] | None = None) -> list[Case]:
    """The manifest's cases, in manifest order, keeping those whose id matches any of the glob patterns."""
    cases = read_manifest(corpus_dir)
    if patterns:
        cases = [c for c in cases if any(fnmatch.fnmatch(c.case_id, p) for p in patterns)]
    return cases
