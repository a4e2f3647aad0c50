"""The import graph of `services`, read with `ast` (no imports run): no cycle, and the layers of STYLE.md.

    services.core            imports no other part of services
    services.<service>       (gateway, worker, results, reconciler) imports services.core and itself, never
                             another service
    composition roots        services.cli, services.celery_worker, services.runner: they put services together

Every import counts, also those inside functions: a lazy import hides a cycle from Python, not from a reader.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.harness import REPO

ROOT = REPO / "services"
SERVICES = ("gateway", "worker", "results", "reconciler")
COMPOSITION_ROOTS = ("services.cli", "services.celery_worker", "services.runner")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in ROOT.rglob("*.py") if "migrations" not in p.parts}


def imported(path: Path, name: str, known: set[str]) -> Iterator[str]:
    """The `services` modules one file imports: `from a.b import c` is `a.b.c` when that is a module."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:  # `import services.core.db.models as m` etc.
                target = target.rpartition(".")[0]
            if target.startswith("services") and target != name:
                yield target


def graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    return {name: set(imported(path, name, known)) for name, path in found.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in edges.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def _package_imports(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    """Importing `services.x.y` runs `services.x/__init__.py` first: a package's own modules importing the
    package are not a cycle of the code, so those edges are left out."""
    return {name: {t for t in targets if not name.startswith(t + ".")} for name, targets in edges.items()}


def test_the_graph_is_read() -> None:
    edges = graph()
    assert "services.core.db.models" in edges["services.core.lifecycle.pages"]
    assert "services.core.documents" in edges["services.gateway.documents.service"]
    assert len(edges) > 100


def test_the_import_graph_has_no_cycle() -> None:
    assert cycles(_package_imports(graph())) == []


def test_cycles_are_found_when_there_is_one() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def layer(name: str) -> str:
    if name.startswith("services.core.") or name == "services.core":
        return "core"
    if any(name == root or name.startswith(root + ".") for root in COMPOSITION_ROOTS):
        return "root"
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in SERVICES else name


def test_core_imports_no_service_and_services_import_only_core() -> None:
    wrong = []
    for name, targets in graph().items():
        own = layer(name)
        if own == "root" or name == "services":
            continue
        for target in targets:
            other = layer(target)
            if other in ("core", own):
                continue
            wrong.append(f"{name} imports {target}")
    assert wrong == [], "\n".join(sorted(wrong))
    assert set(SERVICES) <= {p.name for p in ROOT.iterdir() if p.is_dir()}
