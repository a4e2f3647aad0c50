"""Getting a parser's Markdown for each case: pagemill in this process, a live pagemill, or saved predictions.

Every source answers the same `Outcome`: the Markdown of each page, the seconds the parse took and what failed.
The scorers only ever see that, never which parser produced it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import httpx

from pagemill_eval.corpus import Case
from services.core.errors import PagemillError
from services.core.settings import Settings
from services.runner import parse_locally

FINAL = {"succeeded", "partial", "failed", "cancelled"}


@dataclass(slots=True)
class Outcome:
    pages: list[str] = field(default_factory=list)  # Markdown per page, in page order
    seconds: float = 0.0
    failed_pages: int = 0
    error: str | None = None  # the whole document failed
    confidences: list[float | None] = field(default_factory=list)  # per page, when the parser tells
    warnings: list[list[str]] = field(default_factory=list)  # per page (`text_dropped`, ...), when it tells
    signals: list[dict[str, float]] = field(default_factory=list)  # per page, what its confidence was made of
    # per page, its elements' type, text and own confidence (block-level calibration, `block_calibration.py`)
    blocks: list[list[dict[str, Any]]] = field(default_factory=list)

    @property
    def markdown(self) -> str:
        return "\n\n".join(self.pages)

    def to_json(self) -> dict[str, Any]:
        return {"pages": self.pages, "seconds": self.seconds, "failed_pages": self.failed_pages, "error": self.error,
                "confidences": self.confidences, "warnings": self.warnings, "signals": self.signals,
                "blocks": self.blocks}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Outcome:
        return cls(pages=[str(p) for p in data.get("pages", [])], seconds=float(data.get("seconds", 0.0)),
                   failed_pages=int(data.get("failed_pages", 0)), error=data.get("error"),
                   confidences=[_confidence(c) for c in data.get("confidences") or []],
                   warnings=[[str(w) for w in page or []] for page in data.get("warnings") or []],
                   signals=[_signals(page) for page in data.get("signals") or []],
                   blocks=[_blocks(page) for page in data.get("blocks") or []])


class Source(Protocol):
    name: str

    def parse(self, case: Case) -> Outcome: ...


class LocalPagemill:
    """`services.runner.parse_locally`: the platform's split, engine pipeline and rendering, in this process."""

    def __init__(self, settings: Settings, engine: str | None = None) -> None:
        self.settings = settings
        self.engine = engine or settings.engine.kind.value
        self.name = f"pagemill-{self.engine}"

    def parse(self, case: Case) -> Outcome:
        data = case.input_path.read_bytes()
        started = time.perf_counter()
        try:
            result = parse_locally(data, self.settings, engine_name=self.engine)
        except PagemillError as exc:
            return Outcome(seconds=time.perf_counter() - started, error=f"{exc.code}: {exc}")
        pages = [str(p.get("markdown") or "") if p["status"] == "succeeded" else "" for p in result.pages]
        return Outcome(pages=pages, seconds=result.seconds, failed_pages=result.failed,
                       confidences=[_page_confidence(p) for p in result.pages],
                       warnings=[list(p.get("warnings") or []) for p in result.pages],
                       signals=[_signals(p.get("signals")) for p in result.pages],
                       blocks=[_blocks(p.get("elements")) for p in result.pages])


class RemotePagemill:
    """A live pagemill over its REST API: upload, wait, read the per-page Markdown of the JSON result."""

    def __init__(self, server: str, api_key: str | None = None, mode: str | None = None,
                 timeout_s: float = 900.0) -> None:
        self.server = server.rstrip("/")
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.mode = mode
        self.timeout_s = timeout_s
        self.name = f"pagemill@{self.server}"

    def parse(self, case: Case) -> Outcome:
        started = time.perf_counter()
        with httpx.Client(base_url=self.server, headers=self.headers, timeout=120) as client:
            form = {"mode": self.mode} if self.mode else {}
            with case.input_path.open("rb") as handle:
                created = client.post("/v1/documents", files={"file": (case.input_path.name, handle)}, data=form)
            if created.status_code >= 400:
                return Outcome(seconds=time.perf_counter() - started, error=_error_text(created))
            document_id = created.json()["id"]
            while True:
                state = client.get(f"/v1/documents/{document_id}", params={"wait": 10})
                if state.status_code >= 400:
                    return Outcome(seconds=time.perf_counter() - started, error=_error_text(state))
                status = state.json()["status"]
                if status in FINAL:
                    break
                if time.perf_counter() - started > self.timeout_s:
                    return Outcome(seconds=time.perf_counter() - started, error="timeout")
            seconds = time.perf_counter() - started
            result = client.get(f"/v1/documents/{document_id}/result", params={"format": "json"})
            if result.status_code >= 400:
                return Outcome(seconds=seconds, error=_error_text(result))
        pages = result.json().get("pages", [])
        texts = [str(p.get("markdown") or "") if p.get("status") == "succeeded" else "" for p in pages]
        failed = sum(1 for p in pages if p.get("status") != "succeeded")
        whole_failure = status in ("failed", "cancelled") and failed == len(pages)
        return Outcome(pages=texts, seconds=seconds, failed_pages=failed, error=status if whole_failure else None,
                       confidences=[_page_confidence(p) for p in pages],
                       warnings=[list(p.get("warnings") or []) for p in pages],
                       signals=[_signals(p.get("signals")) for p in pages],
                       blocks=[_blocks(p.get("elements")) for p in pages])


def _confidence(value: Any) -> float | None:
    return None if value is None else float(value)


def _signals(value: Any) -> dict[str, float]:
    """A page's confidence signals, numbers only (a missing or odd entry: none)."""
    if not isinstance(value, dict):
        return {}
    return {str(k): float(v) for k, v in value.items() if isinstance(v, int | float) and not isinstance(v, bool)}


def _blocks(value: Any) -> list[dict[str, Any]]:
    """A page's elements as block calibration reads them: type, plain text and own confidence (None: none)."""
    if not isinstance(value, list):
        return []
    return [{"type": str(e.get("type", "")), "text": str(e.get("text") or ""),
             "confidence": _confidence(e.get("confidence"))} for e in value if isinstance(e, dict)]


def _page_confidence(page: Mapping[str, Any]) -> float | None:
    """A failed page is one the parser itself gave up on: confidence 0."""
    return _confidence(page.get("confidence")) if page.get("status") == "succeeded" else 0.0


def _error_text(response: httpx.Response) -> str:
    try:
        error = response.json()["error"]
        return f"{error['code']}: {error['message']}"
    except Exception:  # noqa: BLE001 - a proxy's HTML error page, say
        return f"http_{response.status_code}"


class SavedPredictions:
    """Outcomes another program wrote: `DIR/<case_id>.json` as `Outcome.to_json()` (the CPU peers do this)."""

    def __init__(self, directory: Path, name: str | None = None) -> None:
        self.directory = directory
        self.name = name or directory.name

    def parse(self, case: Case) -> Outcome:
        path = self.directory / f"{case.case_id}.json"
        if not path.is_file():
            return Outcome(error="no prediction saved for this case")
        return Outcome.from_json(json.loads(path.read_text(encoding="utf-8")))
