"""Shared by the chart, compose and image tests: which settings and commands are real."""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any

from pydantic import BaseModel

from services.cli import main as cli
from services.core.settings import Settings

PREFIX = "PAGEMILL_"


def _nested_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):  # `Model | None`
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            return arg
    return None


def _names(model: type[BaseModel], prefix: str) -> Iterator[str]:
    for name, info in model.model_fields.items():
        env = f"{prefix}{name.upper()}"
        yield env  # a nested model also takes a whole JSON object
        nested = _nested_model(info.annotation)
        if nested is not None:
            yield from _names(nested, f"{env}__")


@cache
def setting_env_names() -> frozenset[str]:
    """Every `PAGEMILL_*` variable `Settings` reads, nested models with `__` (derived, never listed by hand)."""
    return frozenset(_names(Settings, PREFIX))


def unknown_settings(names: Any) -> set[str]:
    return {name for name in names if name.startswith(PREFIX) and name.upper() not in setting_env_names()}


def settings_from_env(env: Mapping[str, str]) -> Settings:
    """The Settings a process with exactly this environment builds (raises on an invalid value)."""
    saved = dict(os.environ)
    try:
        os.environ.clear()
        os.environ.update({k: str(v) for k, v in env.items()})
        return Settings()
    finally:
        os.environ.clear()
        os.environ.update(saved)


def check_cli(argv: list[str]) -> dict[str, Any]:
    """Parses a `pagemill …` command line with the real CLI, without running it; returns the sub-command's
    parameters. Raises click's usage errors for an unknown command or option."""
    if argv[:2] == ["sh", "-c"]:
        argv = shlex.split(argv[2].split("&&")[0].split(">")[0])
    assert argv[0] == "pagemill", argv
    ctx = cli.make_context("pagemill", list(argv[1:]))
    protected = getattr(ctx, "_protected_args", None) or getattr(ctx, "protected_args", [])
    name, command, rest = cli.resolve_command(ctx, [*protected, *ctx.args])
    assert command is not None and name is not None, argv
    sub = command.make_context(name, rest, parent=ctx)
    return {"command": name, **sub.params}
