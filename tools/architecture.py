"""Writes the code map of docs/architecture.md from the modules' own docstrings (`make docs`).

Every module of `services/` opens with a one-line docstring (STYLE.md); this lists them by package, so the map
is regenerated rather than hand-kept, and `tests/unit/test_architecture_doc.py` fails when it falls behind.
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "architecture.md"
MARKERS = ("<!-- code-map:start (tools/architecture.py writes this part) -->", "<!-- code-map:end -->")
ROOTS = ("services", "pagemill_eval")
SKIPPED_PARTS = {"node_modules", "__pycache__", "versions", "vendor"}


def _summary(path: Path) -> str:
    """The first sentence line of a module's docstring ('' for a module without one)."""
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    return docstring.strip().splitlines()[0].strip() if docstring.strip() else ""


def _modules(package: Path) -> list[Path]:
    return sorted(p for p in package.glob("*.py") if not p.name.endswith(("_pb2.py", "_pb2.pyi")))


def code_map(repo: Path = REPO) -> str:
    """The map: one heading per package, one line per module with its docstring's first line."""
    lines: list[str] = []
    for root in ROOTS:
        packages = sorted(p.parent for p in (repo / root).rglob("__init__.py")
                          if not SKIPPED_PARTS & set(p.relative_to(repo).parts))
        for package in packages:
            rel = package.relative_to(repo).as_posix()
            lines += ["", f"**`{rel}/`** — {_summary(package / '__init__.py') or '(package)'}", ""]
            for module in _modules(package):
                if module.name == "__init__.py":
                    continue
                lines.append(f"- `{module.name}` — {_summary(module)}")
    return "\n".join(lines).lstrip("\n") + "\n"


def render(text: str, repo: Path = REPO) -> str:
    """`text` with the part between the markers replaced by today's map."""
    start, end = MARKERS
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n{code_map(repo)}{end}{tail}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--write", action="store_true", help="rewrite docs/architecture.md in place")
    args = parser.parse_args()
    text = DOC.read_text(encoding="utf-8")
    fresh = render(text)
    if args.write:
        DOC.write_text(fresh, encoding="utf-8")
    else:
        print(code_map(), end="")


if __name__ == "__main__":
    main()
