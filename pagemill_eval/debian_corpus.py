"""An eval corpus of born-digital PDFs that are in no corpus of ours: the PDFs Debian's documentation packages ship.

Confidence was fitted and judged on pages generated from dev and wide; documents nobody tuned it for are what it
must work on. Debian's documentation packages ship real PDFs (manuals, reference cards, language references,
translated manuals) made by tools no corpus here was made with. This script takes `.deb` files fetched with
`apt-get download` (or fetches them itself, by exact version), unpacks each with `dpkg-deb -x`, and writes every
distinct PDF it ships (regular files, `.pdf` or `.pdf.gz`; duplicates by content kept once) as an ordinary eval
corpus: a folder per PDF, `MANIFEST.tsv` with kind `digital`, no ground truth (tier `[GT:none]`: the text layer is
the reference once `pagemill calibrate-set` turns the pages into cases), and `provenance.json` recording each
package, version, the `.deb`'s sha256, the path inside it and the PDF's sha256. The PDFs are not committed; the
same packages and versions give the same corpus.

    python -m pagemill_eval.debian_corpus --debs /tmp/debs --out /tmp/debian \\
        r-doc-pdf=4.2.2.20221110-2 glpk-doc=5.0-1 gnuplot-doc=5.4.4+dfsg1-2 ...
"""

from __future__ import annotations

import argparse
import csv
import gzip
import hashlib
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pypdfium2 as pdfium

from pagemill_eval.calibset import MANIFEST_FIELDS, page_text

# The packages and versions docs/evaluation.md measured (Debian 12 "bookworm"): manuals made by texinfo, LaTeX,
# Sphinx and DocBook; prose, tables, formulas, code, plots, a two-page reference card, Spanish and Portuguese.
DEFAULT_PACKAGES = (
    "asymptote-doc=2.85+ds-1", "debian-policy=4.6.2.0", "glpk-doc=5.0-1", "gnuplot-doc=5.4.4+dfsg1-2",
    "r-doc-pdf=4.2.2.20221110-2",
)
_UNSAFE = re.compile(r"[^A-Za-z0-9]+")
_FINGERPRINT_PAGES = 5  # pages whose text tells two builds of one document apart


@dataclass(frozen=True, slots=True)
class ShippedPdf:
    package: str
    version: str
    deb_sha256: str
    path: str  # inside the package, e.g. usr/share/doc/glpk-doc/glpk.pdf
    data: bytes

    @property
    def case_id(self) -> str:
        stem = Path(self.path).name.removesuffix(".gz").removesuffix(".pdf")
        return f"debian_{_UNSAFE.sub('_', self.package)}_{_UNSAFE.sub('_', stem)}".strip("_")


def fetch(spec: str, debs_dir: Path) -> Path:
    """The `.deb` of `name=version` in `debs_dir`, downloaded with `apt-get download` when it is not there."""
    name, _, version = spec.partition("=")
    if not name or not version:
        raise ValueError(f"{spec!r}: expected PACKAGE=VERSION")
    found = _deb_of(debs_dir, name, version)
    if found is None:
        debs_dir.mkdir(parents=True, exist_ok=True)
        subprocess.run(["apt-get", "download", f"{name}={version}"], cwd=debs_dir, check=True)
        found = _deb_of(debs_dir, name, version)
    if found is None:
        raise FileNotFoundError(f"no .deb of {spec} in {debs_dir}")
    return found


def _deb_of(debs_dir: Path, name: str, version: str) -> Path | None:
    # apt-get writes the epoch's colon as %3a; a version without an epoch is written as it is
    quoted = version.replace(":", "%3a")
    return next(iter(sorted(debs_dir.glob(f"{name}_{quoted}_*.deb"))), None)


def shipped_pdfs(deb: Path) -> list[ShippedPdf]:
    """Every regular `.pdf` / `.pdf.gz` file the package ships, in path order (symbolic links left out)."""
    package = _field(deb, "Package")
    version = _field(deb, "Version")
    deb_sha = hashlib.sha256(deb.read_bytes()).hexdigest()
    found: list[ShippedPdf] = []
    with tempfile.TemporaryDirectory(prefix="debian-corpus-") as scratch:
        root = Path(scratch)
        subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
        for path in sorted(root.rglob("*")):
            name = path.name.lower()
            if path.is_symlink() or not path.is_file() or not (name.endswith(".pdf") or name.endswith(".pdf.gz")):
                continue
            data = gzip.decompress(path.read_bytes()) if name.endswith(".gz") else path.read_bytes()
            found.append(ShippedPdf(package, version, deb_sha, str(path.relative_to(root)), data))
    return found


def _field(deb: Path, name: str) -> str:
    return subprocess.run(["dpkg-deb", "-f", str(deb), name], check=True, capture_output=True,
                          text=True).stdout.strip()


def _fingerprint(data: bytes) -> tuple[int, str, int]:
    """Page count, a digest of the first pages' text layer, and its length (0 pages: pdfium cannot open it).

    Two builds of one manual (R's `refman.pdf` and `fullrefman.pdf`) differ in a few bytes and not in text."""
    try:
        pdf = pdfium.PdfDocument(data)
    except pdfium.PdfiumError:
        return 0, "", 0
    try:
        text = "\f".join(page_text(pdf[index]) for index in range(min(len(pdf), _FINGERPRINT_PAGES)))
        return len(pdf), hashlib.sha256(text.encode()).hexdigest(), len(text.strip())
    finally:
        pdf.close()


def write_corpus(debs: Sequence[Path], out_dir: Path) -> list[dict[str, str]]:
    """Write the corpus; returns its manifest rows. A PDF with the page count and first pages' text of an earlier
    one, or that pdfium cannot open, is left out (and said so on stderr)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, str]] = []
    provenance: list[dict[str, object]] = []
    seen: dict[tuple[int, str], str] = {}
    for deb in sorted(debs):
        for pdf in shipped_pdfs(deb):
            digest = hashlib.sha256(pdf.data).hexdigest()
            pages, text_digest, text_chars = _fingerprint(pdf.data)
            if not pages:
                print(f"{pdf.package}:{pdf.path}: pdfium cannot open it, left out", file=sys.stderr)
                continue
            if (pages, text_digest) in seen:
                print(f"{pdf.package}:{pdf.path}: the same pages and text as {seen[pages, text_digest]}, left out",
                      file=sys.stderr)
                continue
            seen[pages, text_digest] = f"{pdf.package}:{pdf.path}"
            # a PDF without a text layer on its first pages is a picture, not a born-digital document
            kind = "digital" if text_chars else "image"
            folder = out_dir / pdf.case_id
            folder.mkdir(exist_ok=True)
            file_name = Path(pdf.path).name.removesuffix(".gz")
            (folder / file_name).write_bytes(pdf.data)
            rows.append({
                "file": f"{pdf.case_id}/{file_name}", "source_repo": f"debian:{pdf.package}",
                "source_path": pdf.path, "commit": pdf.version,
                "license": f"see /usr/share/doc/{pdf.package}/copyright", "kind": kind, "pages": str(pages),
                "ground_truth_files": "-",
                "notes": f"[GT:none] shipped by Debian package {pdf.package} {pdf.version}; no reference: "
                         "calibrate-set takes its text layer as one",
            })
            provenance.append({"file": f"{pdf.case_id}/{file_name}", "package": pdf.package,
                               "version": pdf.version, "deb_sha256": pdf.deb_sha256, "path": pdf.path,
                               "sha256": digest, "size": len(pdf.data), "derived": pdf.path.endswith(".gz")})
    with (out_dir / "MANIFEST.tsv").open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=MANIFEST_FIELDS, delimiter="\t", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    (out_dir / "provenance.json").write_text(json.dumps(provenance, indent=1) + "\n", encoding="utf-8")
    return rows


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pagemill_eval.debian_corpus",
        description="Write the PDFs Debian documentation packages ship as an eval corpus (docs/evaluation.md, "
                    "\"Documents outside every set\").")
    parser.add_argument("packages", nargs="*", default=list(DEFAULT_PACKAGES), metavar="PACKAGE=VERSION",
                        help="the packages, each at an exact version (default: the ones measured)")
    parser.add_argument("--debs", type=Path, required=True, help="where the .deb files are, or are downloaded to")
    parser.add_argument("--out", type=Path, required=True, help="the corpus folder to write")
    args = parser.parse_args(argv)
    rows = write_corpus([fetch(spec, args.debs) for spec in args.packages], args.out)
    pages = sum(int(row["pages"]) for row in rows)
    print(f"{args.out}: {len(rows)} PDFs, {pages} pages, from {len(args.packages)} packages")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
