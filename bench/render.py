"""How long the output formats add per page: the dev corpus parsed by the cpu engine, then every format rendered
from the page results (what assembly does after the last page), timed per format."""

from __future__ import annotations

import argparse
import json
import os
import platform as host
import statistics
import time
from pathlib import Path

from pagemill_eval.corpus import load_cases
from pagemill_eval.sections import write_section
from services.core.settings import Settings
from services.results.render import typeset
from services.results.render.chunks import encoding
from services.results.render.formats import render_document
from services.runner import parse_locally

FORMATS = ("markdown", "elements", "html", "latex", "chunks", "json")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--pages-cache", type=Path, default=None,
                        help="keep the parsed pages here (one JSON per case) and reuse them on the next run")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--write", type=Path, default=None)
    args = parser.parse_args()
    settings = Settings()
    documents = []
    for case in load_cases(args.corpus):
        cached = args.pages_cache / f"{case.case_id}.json" if args.pages_cache else None
        if cached and cached.exists():
            pages = json.loads(cached.read_text())
        else:
            pages = parse_locally(case.input_path.read_bytes(), settings, engine_name="cpu").pages
            if cached:
                cached.parent.mkdir(parents=True, exist_ok=True)
                cached.write_text(json.dumps(pages, ensure_ascii=False))
        documents.append((case.case_id, pages))
    started = time.perf_counter()
    encoding(settings.outputs.chunk_tokenizer.value)
    tokenizer_s = time.perf_counter() - started
    totals = {fmt: [] for fmt in FORMATS}  # seconds of the whole corpus, per repeat
    per_document: dict[str, float] = {}
    for _ in range(args.repeat):
        typeset._rendered.clear()  # every repeat pays the node run, as a fresh assembly does
        run = dict.fromkeys(FORMATS, 0.0)
        for case_id, pages in documents:
            body = {"id": case_id, "filename": case_id, "pages": pages}
            rendered = render_document(pages, body, settings)
            for fmt, seconds in rendered.seconds.items():
                run[fmt] += seconds
            per_document[case_id] = min(per_document.get(case_id, 1e9), sum(rendered.seconds.values()))
        for fmt in FORMATS:
            totals[fmt].append(run[fmt])
    page_count = sum(len(pages) for _, pages in documents)
    median = {fmt: statistics.median(values) for fmt, values in totals.items()}
    all_s = sum(median.values())
    slowest = max(per_document, key=lambda c: per_document[c])
    rows = [f"| {fmt} | {median[fmt] * 1000 / page_count:.1f} |" for fmt in FORMATS]
    text = "\n".join([
        "## Rendering the output formats (`make bench-render`)", "",
        f"Command: `python -m bench.render {args.corpus}`  ",
        f"Machine: {os.cpu_count()} cores (shared), {host.machine()}, Python {host.python_version()}; measured "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. {len(documents)} documents, {page_count} pages "
        f"parsed once by the cpu engine, then every format rendered from the page results, median of "
        f"{args.repeat} runs; KaTeX {'in node' if typeset.available() else 'missing (formulas as source)'}.", "",
        "| format | ms per page |", "|---|---|", *rows,
        f"| **all formats** | **{all_s * 1000 / page_count:.1f}** |", "",
        f"`elements` is the Markdown → element tree derivation (until the engines give elements). Once per "
        f"process, the tokenizer's vocabulary loads in {tokenizer_s:.1f} s. A document with formulas pays one "
        f"node run for KaTeX (most of the html time: the slowest document, {slowest}, takes "
        f"{per_document[slowest] * 1000:.0f} ms in all). Compiling the LaTeX is the reader's business and not "
        "counted; the corpus test measures it (0.3–2 s a document with XeLaTeX).",
    ])
    print(text)
    if args.write:
        write_section(args.write, text, name="bench-render")


if __name__ == "__main__":
    main()
