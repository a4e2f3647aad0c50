"""How the worker's modules depend on each other, counted: the figures issue 25 tracks, and the rules it set.

Rules (tests/unit/test_worker_graph.py keeps them): inside `services/worker`, `engines/` imports nothing of
the worker outside `engines/` (no arrow back up); no module imports another module's private (`_name`) names;
nothing outside `engines/cpu/` imports the cpu engine's insides (only the package, `engines.cpu`).
The test also keeps at zero: `getattr` on an engine, `engine: Any`, UPDATEs of Document/Page outside
the lifecycle (the modules of the package `services/core/lifecycle/`, nothing else; an UPDATE statement, or an
ORM write to a row's state column, `STATE_COLUMNS`), and one OpenAI client. Counted besides: `dict[str, Any]` in
`services/`, OpenAI-client copies (modules mapping the unavailable statuses of an OpenAI-compatible server).
`python -m tools.worker_graph` prints them.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKER = "services.worker"
LIFECYCLE = "services.core.lifecycle"  # the package whose modules alone may UPDATE documents and pages


@dataclass
class Figures:
    """The counted findings, each a list of `path:line what` strings."""

    upward: list[str] = field(default_factory=list)
    private: list[str] = field(default_factory=list)
    cpu_insides: list[str] = field(default_factory=list)
    engine_getattr: list[str] = field(default_factory=list)
    engine_any: list[str] = field(default_factory=list)
    updates_outside_lifecycle: list[str] = field(default_factory=list)
    dict_any: int = 0
    openai_clients: list[str] = field(default_factory=list)


def _module(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(tree: ast.AST) -> list[tuple[int, str, list[str]]]:
    found: list[tuple[int, str, list[str]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module, [alias.name for alias in node.names]))
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name, []) for alias in node.names)
    return found


def _is_engine(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and "engine" in node.id.lower() or (
        isinstance(node, ast.Attribute) and "engine" in node.attr.lower())


def measure(root: Path = ROOT) -> Figures:
    """Every figure over the tree at `root`."""
    figures = Figures()
    for path in sorted((root / "services").rglob("*.py")):
        source = path.read_text()
        tree = ast.parse(source)
        module, where = _module(path, root), str(path.relative_to(root))
        figures.dict_any += source.count("dict[str, Any]")
        if module.startswith(WORKER):
            _worker_rules(module, where, tree, figures)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
                    and node.args and _is_engine(node.args[0])):
                figures.engine_getattr.append(f"{where}:{node.lineno}")
            if (isinstance(node, ast.arg) and "engine" in node.arg and isinstance(node.annotation, ast.Name)
                    and node.annotation.id == "Any"):
                figures.engine_any.append(f"{where}:{node.lineno} {node.arg}")
        if module != LIFECYCLE and not module.startswith(f"{LIFECYCLE}."):
            for match in re.finditer(r"(sa\.)?update\((Document|Page)\)", source):
                figures.updates_outside_lifecycle.append(f"{where}:{source.count(chr(10), 0, match.start()) + 1}")
            figures.updates_outside_lifecycle.extend(f"{where}:{line}" for line in _state_writes(tree))
        if "UNAVAILABLE" in source and ("chat/completions" in source or "openai" in source.lower()):
            figures.openai_clients.append(where)
    return figures


# The columns that carry a document's or a page's state: an ORM write to one of them is an UPDATE at the flush.
STATE_COLUMNS = frozenset({"status", "enqueued_at", "lease_expires_at", "split_enqueued_at", "split_at",
                           "jobs_unsent_since", "deleted_at", "expired_at", "scrubbed_at", "progress_event_at",
                           "error_code", "error_message", "finished_at", "started_at"})


def _state_writes(tree: ast.AST) -> list[int]:
    """Lines that assign a state column of an object named `document` or `page` (an ORM row)."""
    lines = []
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AugAssign | ast.AnnAssign) else []
        flat = [t for target in targets for t in (target.elts if isinstance(target, ast.Tuple) else [target])]
        if any(isinstance(t, ast.Attribute) and t.attr in STATE_COLUMNS and isinstance(t.value, ast.Name)
               and t.value.id in ("document", "page", "doc", "row") for t in flat):
            lines.append(node.lineno)
    return lines


def _worker_rules(module: str, where: str, tree: ast.AST, figures: Figures) -> None:
    in_engines = module.startswith(f"{WORKER}.engines")
    in_cpu = module.startswith(f"{WORKER}.engines.cpu")
    for line, target, names in _imports(tree):
        if not target.startswith(WORKER):
            continue
        if in_engines and not target.startswith(f"{WORKER}.engines"):
            figures.upward.append(f"{where}:{line} {target}")
        if target.startswith(f"{WORKER}.engines.cpu.") and not in_cpu:
            figures.cpu_insides.append(f"{where}:{line} {target}")
        if target != module:
            figures.private.extend(f"{where}:{line} {target}.{name}" for name in names
                                   if name.startswith("_") and not name.startswith("__"))


def main() -> None:
    """Print the figures."""
    figures = measure()
    for name, value in vars(figures).items():
        count = value if isinstance(value, int) else len(value)
        print(f"{name}: {count}")
        if isinstance(value, list):
            for item in value:
                print(f"    {item}")


if __name__ == "__main__":
    main()
