"""One generated section of a Markdown file (docs/benchmarks.md, docs/evaluation.md…), rewritten in place.

A section lies between `<!-- NAME:start -->` and `<!-- NAME:end -->`; everything outside the markers is kept.
Every tool that writes figures into the docs (`make bench…`, `make specsim`, `pagemill_eval.boxes`…) writes
through here.
"""

from __future__ import annotations

from pathlib import Path


def markers(name: str) -> tuple[str, str]:
    """The start and end markers of section `name`."""
    return f"<!-- {name}:start -->", f"<!-- {name}:end -->"


def write_section(path: Path, text: str, name: str) -> None:
    """Replaces section `name` of the file with `text` (with or without its markers), or appends it when the file
    has no such section; a missing file starts as `# Benchmarks`."""
    start, end = markers(name)
    body = text.strip("\n")
    if body.startswith(start):
        body = body[len(start):]
    if body.endswith(end):
        body = body[: -len(end)]
    block = f"{start}\n{body.strip(chr(10))}\n{end}"
    current = path.read_text(encoding="utf-8") if path.exists() else "# Benchmarks\n"
    if start in current and end in current and current.index(start) < current.index(end):
        current = current[: current.index(start)] + block + current[current.index(end) + len(end):]
    else:
        current = current.rstrip("\n") + "\n\n" + block + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(current, encoding="utf-8")
