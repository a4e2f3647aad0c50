"""Engines by name, with their heavy imports deferred until one is loaded."""

from __future__ import annotations

import threading
from functools import lru_cache

from services.core.settings import EngineKind, Settings
from services.worker.engines.base import Engine, PageInput, PageOutput

__all__ = ["Engine", "PageInput", "PageOutput", "engine_names", "load_engine"]


def engine_names() -> list[str]:
    return [kind.value for kind in EngineKind]


_load_lock = threading.Lock()


def load_engine(kind: str, settings: Settings) -> Engine:
    # One engine per process and settings, even when a thread pool's first pages all ask at once: the vllm
    # engine's in-flight bound is its instance's sender threads (vllm/senders.py).
    with _load_lock:
        return _load(kind, settings.model_dump_json(include={"engine", "limits"}))


@lru_cache(maxsize=8)
def _load(kind: str, settings_json: str) -> Engine:
    settings = Settings.model_validate_json(settings_json)
    if kind == EngineKind.CPU:
        from services.worker.engines.cpu import CpuEngine

        return CpuEngine(settings)
    if kind == EngineKind.FAKE:
        from services.worker.engines.fake import FakeEngine

        return FakeEngine(latency_ms=settings.engine.fake_latency_ms)
    if kind == EngineKind.VLLM:
        from services.worker.engines.vllm.engine import VllmEngine

        return VllmEngine(settings)
    raise ValueError(f"unknown engine {kind!r}; choose one of {engine_names()}")
