"""The licences of pagemill's runtime closure, written to docs/licenses.md (`make licenses`, run by CI).

The closure is what `pip install pagemill` brings, on this platform: the packages uv.lock reaches from pagemill's
`dependencies` (no extra), markers evaluated here. Each licence is read from the installed package's metadata
(`License-Expression`, else the `License :: ...` classifiers, else a short `License` field). Fails when a
package of the closure is missing, is installed at another version than the lock's, has no licence it can read,
or is under the GPL or AGPL, or the LGPL (except a package listed in `LGPL_ALLOWED` under exactly the licence
listed there: psycopg, used unmodified); with `--write`, also when the report it rewrote was stale. The extras
(local, eval, dev) are tools for developers, not shipped in the images: they are listed apart for information
and never fail the check.
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from dataclasses import dataclass
from importlib import metadata
from importlib.metadata import PackageMetadata
from pathlib import Path
from typing import Any

from packaging.markers import Marker

REPO = Path(__file__).resolve().parents[1]
LOCK = REPO / "uv.lock"
OUT = REPO / "docs" / "licenses.md"
PROJECT = "pagemill"


@dataclass(frozen=True)
class LgplAllowance:
    """An LGPL package that may ship: under exactly this licence (a change of licence is reviewed again)."""

    license: str
    reason: str


_PSYCOPG_REASON = ("the PostgreSQL driver, installed from PyPI and imported as a library, never modified, "
                   "patched or copied into pagemill; anyone can replace it with another build of the same API, "
                   "which is what the LGPL asks of a work that uses the library")
# Packages allowed under the LGPL, each with the licence reviewed and the reason. Nothing else LGPL may ship.
LGPL_ALLOWED: dict[str, LgplAllowance] = {
    "psycopg": LgplAllowance("LGPL-3.0-only", _PSYCOPG_REASON),
    "psycopg-binary": LgplAllowance(
        "LGPL-3.0-only", "psycopg's compiled speed-ups (the same project, used the same way, and replaceable by "
        "psycopg's pure-Python mode over the machine's libpq), with libpq and the shared libraries libpq loads "
        "bundled unmodified (PostgreSQL, OpenSSL, Kerberos, OpenLDAP, Cyrus SASL licences; libxcrypt and "
        "keyutils: LGPL-2.1)"),
}
# Packages whose metadata names no licence: the licence read from their source by hand, with where it was read.
KNOWN: dict[str, str] = {}


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _locked_packages(lock: Path) -> dict[str, dict[str, Any]]:
    data = tomllib.loads(lock.read_text(encoding="utf-8"))
    packages: dict[str, dict[str, Any]] = {}
    for package in data["package"]:
        # A package locked at two versions (by Python version) appears twice: their edges are merged.
        entry = packages.setdefault(normalize(package["name"]),
                                    {"versions": set(), "dependencies": [], "optional-dependencies": {}})
        entry["versions"].add(package["version"])
        entry["dependencies"] += package.get("dependencies", [])
        for extra, deps in package.get("optional-dependencies", {}).items():
            entry["optional-dependencies"].setdefault(extra, []).extend(deps)
    return packages


def _applies(dependency: dict[str, Any], extra: str = "") -> bool:
    marker = dependency.get("marker")
    return marker is None or Marker(marker).evaluate({"extra": extra})


def closure(extras: tuple[str, ...] = (), lock: Path = LOCK) -> set[str]:
    """Normalized names of the packages uv.lock installs for pagemill with `extras`, on this platform (pagemill
    itself excluded)."""
    packages = _locked_packages(lock)
    seen: set[str] = set()
    todo: list[tuple[str, tuple[str, ...]]] = [(PROJECT, extras)]
    while todo:
        name, wanted = todo.pop()
        entry = packages[name]
        edges = [d for d in entry["dependencies"] if _applies(d)]
        for extra in wanted:
            edges += [d for d in entry["optional-dependencies"].get(extra, []) if _applies(d, extra)]
        for dep in edges:
            dep_name = normalize(dep["name"])
            dep_extras = tuple(dep.get("extra", ()))
            key = f"{dep_name}[{','.join(dep_extras)}]"
            if key in seen:
                continue
            seen.add(key)
            todo.append((dep_name, dep_extras))
    return {key.split("[")[0] for key in seen} - {PROJECT}


def locked_versions(lock: Path = LOCK) -> dict[str, set[str]]:
    return {name: entry["versions"] for name, entry in _locked_packages(lock).items()}


@dataclass(frozen=True)
class License:
    package: str
    version: str
    license: str  # as the metadata says it, shortened
    source: str  # which field it came from

    @property
    def verdict(self) -> str:
        """`ok`, or why the package may not ship."""
        if not self.license:
            return "no licence in its metadata"
        alternatives = re.split(r"\s+OR\s+|\s*;\s*", self.license)
        if any(not _copyleft(alt) for alt in alternatives):
            return "ok"
        allowance = LGPL_ALLOWED.get(self.package)
        if allowance is not None and self.license == allowance.license:
            return "ok"
        return "copyleft (GPL/AGPL/LGPL)"


def _copyleft(text: str) -> bool:
    return bool(re.search(r"\b(A?GPL|LGPL)\b|General Public License", text))


def _field(meta: PackageMetadata, key: str) -> str:
    return str(meta[key]) if key in meta else ""


def read_license(name: str) -> License:
    dist = metadata.distribution(name)
    meta = dist.metadata
    version = dist.version
    if name in KNOWN:
        return License(name, version, KNOWN[name], "read by hand")
    if expression := _field(meta, "License-Expression"):
        return License(name, version, expression.strip(), "License-Expression")
    classifiers = [c.split(" :: ")[-1] for c in meta.get_all("Classifier") or [] if c.startswith("License ::")]
    classifiers = [c for c in classifiers if c != "OSI Approved"]
    if classifiers:
        return License(name, version, "; ".join(classifiers), "classifier")
    field = _field(meta, "License").strip()
    if field and "\n" not in field and len(field) < 100:
        return License(name, version, field, "License")
    return License(name, version, "", "")


def table(rows: list[License]) -> list[str]:
    lines = ["| package | version | licence | from |", "|---|---|---|---|"]
    lines += [f"| {r.package} | {r.version} | {r.license or '?'} | {r.source or '-'} |" for r in rows]
    return lines


def report(runtime: list[License], extras: list[License]) -> str:
    return "\n".join([
        "# Licences",
        "",
        "pagemill is licensed under the Apache License 2.0 (`LICENSE`). Below: every package `pip install pagemill`",
        "brings (its runtime closure, from `uv.lock`, on Linux x86-64, CPython 3.11), with the licence its",
        "installed metadata declares. `make licenses` regenerates this page and fails on a GPL or AGPL licence",
        "(LGPL only for a package explicitly allowed in `tools/licenses.py`, under the licence reviewed there), on",
        "a package whose licence it cannot read, and on a missing package. Generated: do not edit.",
        "",
        "## LGPL packages allowed, and why",
        "",
        "| package | licence | why it may ship |",
        "|---|---|---|",
        *[f"| {name} | {allowance.license} | {allowance.reason} |" for name, allowance in sorted(LGPL_ALLOWED.items())],
        "",
        f"## Runtime ({len(runtime)} packages)",
        "",
        *table(runtime),
        "",
        f"## Extras only: `[local]`, `[eval]`, `[dev]` ({len(extras)} packages, for information)",
        "",
        "Tools for developers and the evaluation; not in the images and not checked.",
        "",
        *table(extras),
        "",
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", type=Path, default=None,
                        help=f"write the report here (e.g. {OUT.relative_to(REPO)}); a change fails the run")
    args = parser.parse_args(argv)
    runtime_names = sorted(closure())
    extra_names = sorted(closure(("local", "eval", "dev")) - set(runtime_names))
    locked = locked_versions()
    problems: list[str] = []
    runtime: list[License] = []
    for name in runtime_names:
        try:
            row = read_license(name)
        except metadata.PackageNotFoundError:
            problems.append(f"{name}: in the runtime closure but not installed (make install)")
            continue
        runtime.append(row)
        if row.version not in locked[name]:
            problems.append(f"{name}: {row.version} is installed, uv.lock has {' or '.join(sorted(locked[name]))} "
                            "(make install)")
        if row.verdict != "ok":
            problems.append(f"{name} {row.version}: {row.verdict}: {row.license or '?'}")
    extras = []
    for name in extra_names:
        try:
            extras.append(read_license(name))
        except metadata.PackageNotFoundError:
            extras.append(License(name, "-", "", "not installed"))
    text = report(runtime, extras)
    if args.write:
        if not args.write.exists() or args.write.read_text(encoding="utf-8") != text:
            args.write.write_text(text, encoding="utf-8")
            problems.append(f"{args.write} was stale: rewritten, commit it")
    else:
        sys.stdout.write(text)
    for problem in problems:
        print(f"licenses: {problem}", file=sys.stderr)
    print(f"licenses: {len(runtime)} runtime packages, {len(problems)} problem(s)", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
