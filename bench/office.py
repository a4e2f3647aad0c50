"""Conversion time of office documents (LibreOffice, sandboxed as in the worker), per document and per page.

    python -m bench.office ../shared/corpus/office --write docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from services.core.formats import sniff_office
from services.core.pdf import inspect_document
from services.core.settings import Settings
from services.worker.convert import convert_document

START, END = "<!-- bench-office:start -->", "<!-- bench-office:end -->"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--write", type=Path)
    args = parser.parse_args()
    rows, per_page = [], []
    for path in sorted(args.corpus.glob("*/*")):
        data = path.read_bytes()
        media_type = sniff_office(data) if path.suffix not in (".md",) else None
        if media_type is None or path.name.endswith(".docx.html"):
            continue
        started = time.perf_counter()
        converted = convert_document(data, media_type, Settings())
        seconds = time.perf_counter() - started
        pages = inspect_document(converted.pdf).page_count
        per_page.append(seconds / pages)
        rows.append(f"| {path.name} | {media_type.rsplit('/', 1)[-1][:40]} | {pages} | {seconds:.2f} | "
                    f"{seconds / pages:.2f} |")
    table = "\n".join([
        START, "## Office conversion (LibreOffice, one sandboxed process per document)", "",
        f"`python -m bench.office {args.corpus} --write docs/benchmarks.md` — each document converted once as the "
        "worker does it (guard, throwaway profile, `unshare -n`, rlimits), cold start included, on 2 cores shared "
        "with other jobs at the time; "
        f"median {statistics.median(per_page):.2f} s per page, mean {statistics.mean(per_page):.2f} s.", "",
        "| document | type | pages | seconds | seconds/page |", "|---|---|---|---|---|", *rows, END])
    print(table)
    if args.write:
        text = args.write.read_text() if args.write.exists() else ""
        if START in text:
            text = text[:text.index(START)] + table + text[text.index(END) + len(END):]
        else:
            text = text.rstrip() + "\n\n" + table + "\n"
        args.write.write_text(text)


if __name__ == "__main__":
    main()
