"""Counts of the rough edges issue 25 names, so a refactor can say what it changed: `python -m tools.code_health`.

- upward imports inside services/worker: a module of a worker subpackage importing a module of the worker's top
  level (`engines/vllm.py` → `worker/presets.py`);
- private cross-module imports: `from services.a import _name` from another module;
- getattr on engines: `getattr(engine, …)` / `getattr(self.engine, …)`;
- `engine: Any` annotations;
- UPDATEs of documents and pages outside `services/core/lifecycle.py` (`update(Document)`, `update(Page)`);
- OpenAI client modules: modules that hold an unavailable-status set or post to `/v1/chat/completions` with
  their own httpx client (one is the goal).
"""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORKER = ("services", "worker")
LIFECYCLE = Path("services/core/lifecycle.py")

_GETATTR_ENGINE = re.compile(r"getattr\(\s*(?:self\.)?engine\b")
_ENGINE_ANY = re.compile(r"\bengine\s*:\s*Any\b")
_UPDATE_ROW = re.compile(r"\bupdate\(\s*(?:Document|Page)\s*\)")
_STATUS_SET = re.compile(r"frozenset\(\{\s*429\s*,\s*502\s*,\s*503\s*,\s*504\s*\}\)")


def _module_of(root: Path, path: Path) -> tuple[str, ...]:
    parts = path.relative_to(root).with_suffix("").parts
    return parts[:-1] if parts[-1] == "__init__" else parts


def _imports(tree: ast.Module) -> list[tuple[str, list[str]]]:
    found: list[tuple[str, list[str]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.module, [alias.name for alias in node.names]))
        elif isinstance(node, ast.Import):
            found.extend((alias.name, []) for alias in node.names)
    return found


def _is_upward(root: Path, importer: Path, target: tuple[str, ...]) -> bool:
    """`importer` sits in a worker subpackage and `target` is a module of the worker's top level."""
    package = importer.relative_to(root).parent.parts
    top_level_module = len(target) == 3 and root.joinpath(*target).with_suffix(".py").exists()
    return package[:2] == WORKER and len(package) > 2 and target[:2] == WORKER and top_level_module


def count(root: Path = ROOT) -> dict[str, list[str]]:
    """{measure: the places it was found at} in the checkout at `root`."""
    found: dict[str, list[str]] = {key: [] for key in (
        "upward imports inside services/worker", "private cross-module imports", "getattr on engines",
        "engine: Any", "UPDATEs of documents/pages outside lifecycle", "OpenAI client modules")}
    for path in sorted((root / "services").rglob("*.py")):
        relative = path.relative_to(root)
        text = path.read_text(encoding="utf-8")
        own = _module_of(root, path)
        for module, names in _imports(ast.parse(text)):
            target = tuple(module.split("."))
            if _is_upward(root, path, target):
                found["upward imports inside services/worker"].append(f"{relative} → {module}")
            if target[0] == "services" and target != own:
                for name in names:
                    if name.startswith("_") and not name.startswith("__"):
                        found["private cross-module imports"].append(f"{relative} → {module}.{name}")
        for line_no, line in enumerate(text.splitlines(), 1):
            where = f"{relative}:{line_no}"
            if _GETATTR_ENGINE.search(line):
                found["getattr on engines"].append(where)
            if _ENGINE_ANY.search(line):
                found["engine: Any"].append(where)
            if _UPDATE_ROW.search(line) and relative != LIFECYCLE:
                found["UPDATEs of documents/pages outside lifecycle"].append(where)
        if _STATUS_SET.search(text) or ("/v1/chat/completions" in text and "httpx.Client(" in text):
            found["OpenAI client modules"].append(str(relative))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="list where each count was found")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to count in (default: this one)")
    args = parser.parse_args()
    for measure, places in count(args.root.resolve()).items():
        print(f"{len(places):4d}  {measure}")
        if args.verbose:
            for place in places:
                print(f"        {place}")


if __name__ == "__main__":
    main()
