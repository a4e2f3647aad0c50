"""The result cache's engine fingerprint: every engine setting is classified, and exactly the settings that
change an engine's output change its cache keys."""

from __future__ import annotations

from enum import Enum
from typing import Any

import pytest
from pydantic import BaseModel

from services.core import cache
from services.core.settings import EngineSettings, Settings

PAGE = b"%PDF-1.7 one page"


def leaf_paths(model: type[BaseModel], prefix: str) -> set[str]:
    """Every setting under `model` as a dotted path; nested models are walked, not counted."""
    paths: set[str] = set()
    for name, field in model.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            paths |= leaf_paths(annotation, f"{prefix}{name}.")
        else:
            paths.add(f"{prefix}{name}")
    return paths


def output_paths() -> set[str]:
    return {path for paths in cache.OUTPUT_SETTINGS.values() for path in paths}


def with_setting(model: BaseModel, path: str, value: Any) -> Any:
    """A copy of `model` with one (nested) setting replaced."""
    head, _, rest = path.partition(".")
    inner = with_setting(getattr(model, head), rest, value) if rest else value
    return model.model_copy(update={head: inner})


def other_value(value: Any) -> Any:
    """A different value of the same type."""
    if isinstance(value, Enum):
        return next(member for member in type(value) if member != value)
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 7
    if isinstance(value, str):
        return value + "-other"
    if isinstance(value, list):
        return [*value, value[-1] if value else "x"]
    if isinstance(value, dict):
        return {**value, "top_k": 5}
    if value is None:
        return "set"
    return f"other-{value}"


def keys(settings: Settings, engine: str) -> tuple[str, str]:
    page = cache.page_key(data=PAGE, mode="accurate", engine=engine, scope=cache.scope({}), settings=settings)
    document = cache.document_key(sha256="0" * 64, page_numbers=[1], mode="accurate", engine=engine, options={},
                                  settings=settings)
    return page, document


def test_every_engine_setting_is_classified_once() -> None:
    engine_settings = leaf_paths(EngineSettings, "engine.")
    unclassified = engine_settings - output_paths() - cache.NO_OUTPUT_EFFECT
    assert not unclassified, (f"classify these EngineSettings fields in services/core/cache.py: OUTPUT_SETTINGS "
                              f"(they change an engine's output) or NO_OUTPUT_EFFECT: {sorted(unclassified)}")
    assert not output_paths() & cache.NO_OUTPUT_EFFECT
    known = leaf_paths(Settings, "")
    assert (output_paths() | cache.NO_OUTPUT_EFFECT) <= known, "a classified setting does not exist"
    assert set(cache.OUTPUT_SETTINGS) == set(cache.ENGINE_VERSIONS) == {"cpu", "vllm", "fake"}


@pytest.mark.parametrize("engine", sorted(cache.ENGINE_VERSIONS))
def test_a_setting_changes_the_keys_exactly_when_it_changes_the_output(engine: str) -> None:
    base = Settings()
    counted = set(cache.OUTPUT_SETTINGS[engine])
    for dependency in cache.DEPENDS_ON.get(engine, ()):
        counted |= set(cache.OUTPUT_SETTINGS[dependency])
    for path in sorted(leaf_paths(EngineSettings, "engine.") | output_paths()):
        current: Any = base
        for part in path.split("."):
            current = getattr(current, part)
        changed = with_setting(base, path, other_value(current))
        differs = [a != b for a, b in zip(keys(base, engine), keys(changed, engine), strict=True)]
        assert differs == [path in counted] * 2, f"{engine}: {path} {'should' if path in counted else 'must not'} " \
                                                 "change the cache keys"


def test_a_version_bump_changes_the_keys_of_the_engine_and_of_engines_built_on_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings()
    before = {engine: keys(settings, engine) for engine in cache.ENGINE_VERSIONS}
    monkeypatch.setitem(cache.ENGINE_VERSIONS, "cpu", "bumped")
    after = {engine: keys(settings, engine) for engine in cache.ENGINE_VERSIONS}
    assert after["cpu"] != before["cpu"] and after["vllm"] != before["vllm"]  # vllm pages fall back to cpu
    assert after["fake"] == before["fake"]


def test_engines_never_share_keys() -> None:
    settings = Settings()
    assert len({keys(settings, engine) for engine in cache.ENGINE_VERSIONS}) == len(cache.ENGINE_VERSIONS)
