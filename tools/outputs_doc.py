"""Writes the examples of docs/outputs.md: corpus documents parsed by the cpu engine and rendered into every
format by the same code as the results service (`make outputs-doc`). Only the part between the markers is
rewritten; the prose around it is the page's own."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from pagemill_eval.sections import write_section
from services.core.settings import Settings
from services.runner import parse_locally, render_local

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "outputs.md"
CASES = ("docling_2305.03393v1-pg9/2305.03393v1-pg9.pdf", "docling_code_and_formula/code_and_formula.pdf")
MAX_LINES = 40


def clip(text: str, max_lines: int = MAX_LINES, width: int = 300) -> str:
    lines = [line if len(line) <= width else line[:width] + " …" for line in text.strip().splitlines()]
    return "\n".join(lines[:max_lines] + ([f"… ({len(lines) - max_lines} more lines)"] if len(lines) > max_lines
                                          else []))


def html_body(html: str) -> str:
    """The document's own part of document.html: the head (CSP, styles, inlined KaTeX CSS) is summarised."""
    head = html[:html.index("<body>")]
    css = len(head.encode())
    body = html[html.index("<main>"):html.index("</main>") + len("</main>")]
    body = re.sub(r'<span class="katex-display">.*?</div>',
                  '<span class="katex-display">…KaTeX HTML and MathML…</span></div>', body, flags=re.S)
    return f"<!-- <head>: charset, Content-Security-Policy, styles (KaTeX CSS and fonts when there are formulas): " \
        f"{css:,} bytes -->\n" \
        + body


def examples(corpus: Path) -> str:
    settings = Settings()
    parts: list[str] = []
    for relative in CASES:
        path = corpus / "dev" / relative
        result = parse_locally(path.read_bytes(), settings, engine_name="cpu")
        bodies = render_local(result, settings, ["markdown", "html", "latex", "json", "chunks"], filename=path.name)
        document = json.loads(bodies["json"])
        for page in document["pages"]:  # the per-page details that say nothing about the formats
            for key in ("signals", "latency_ms"):
                page.pop(key, None)
        chunks = json.loads(bodies["chunks"])
        parts += [f"### `{relative}` (corpus/dev), {len(result.pages)} page(s)", "",
                  "**Markdown** (`format=markdown`, `document.md`):", "", "```markdown",
                  clip(bodies["markdown"].decode()), "```", "",
                  "**HTML** (`format=html`, `document.html`):", "", "```html", clip(html_body(bodies["html"].decode())),
                  "```", "", "**LaTeX** (`format=latex`, `document.tex`):", "", "```latex",
                  clip(bodies["latex"].decode(), 60), "```", "",
                  "**JSON** (`format=json`, `document.json`):", "", "```json",
                  clip(json.dumps(document, ensure_ascii=False, indent=1), 30), "```", "",
                  f"**Chunks** (`format=chunks`, `chunks.json`): {len(chunks['chunks'])} chunks of at most "
                  f"{chunks['max_tokens']} {chunks['tokenizer']} tokens; the first:", "", "```json",
                  clip(json.dumps({**chunks, "chunks": chunks["chunks"][:1]}, ensure_ascii=False, indent=1), 40),
                  "```", ""]
    return "\n".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", type=Path, default=REPO.parent / "shared" / "corpus")
    args = parser.parse_args()
    write_section(DOC, examples(args.corpus), "outputs-examples")
    print(f"updated: {DOC}")


if __name__ == "__main__":
    main()
