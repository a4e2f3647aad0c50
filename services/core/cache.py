"""The result cache: identical work is answered from earlier results instead of running an engine again.

    document key = sha256(file sha256, selected pages, mode, engine fingerprint, parse options)
    page key     = sha256(page-file fingerprint, mode, engine fingerprint, parse options)
    engine fingerprint = engine name, its version, the settings that change its output (`OUTPUT_SETTINGS`),
                         and the same for the engines it builds on (vllm pages: the cpu engine)

The gateway computes document keys with its own settings, so it must see the same `PAGEMILL_ENGINE__*` and
`PAGEMILL_LIMITS__*` values as the workers (the chart's ConfigMap, the compose file's `x-pagemill-env`).
Keys live on the rows of the documents and pages that produced results, so a lookup is an indexed query
and a deleted or expired document can never answer (its rows are filtered out). Lookups stay within one
tenant: a shared cache would tell a tenant, through timing, what another tenant uploaded.
`do_not_cache=true` leaves the keys empty (the document is never found); `cache=false` skips the lookup.
A hit's copy carries its own id and filename wherever a format shows one (`retitled_html`, the JSON ones), so
deleting the original erases its filename from the copy too.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from services.core.db.models import Document, DocumentStatus, Page, PageStatus
from services.core.settings import Settings

# An engine's version: bump it when the engine's output for the same page and settings changes, and every
# cached result of the old version stops matching. What each covers:
#   cpu   services/worker/engines/cpu/ (text layer, layout, tables, OCR) and the page rendering in core/pdf.py
#   vllm  services/worker/engines/vllm/engine.py, presets.py (prompts, answer parsing, preset defaults), quality.py and
#         pipeline.py (anchors, answer checks, the temperature ladder, the fallback); a change of the cpu engine
#         reaches vllm pages through their fingerprint's "cpu" part
#   fake  services/worker/engines/fake.py
ENGINE_VERSIONS = {"cpu": "2", "fake": "2", "vllm": "1"}
# The settings (paths under `Settings`) an engine's output depends on besides the page and its version. When
# in doubt a setting counts: a needless miss costs one parse, a wrong hit hands out a page the current
# settings would not make. Every field of `EngineSettings` is in some engine's list or in `NO_OUTPUT_EFFECT`
# (tests/unit/test_cache_fingerprint.py fails on a new field that is in neither).
OUTPUT_SETTINGS: dict[str, tuple[str, ...]] = {
    "cpu": ("engine.ocr_dpi", "limits.max_render_pixels",
            "engine.ocr_rescale_lines"),  # signals only: a refit needs them on the pages it reads, not cached ones
    "vllm": (
        "engine.preset", "engine.model", "engine.render_longest_side", "engine.max_tokens", "engine.max_attempts",
        "engine.temperatures", "engine.anchor", "engine.anchor_max_chars", "engine.request_extra",
        "engine.pages_per_request",  # a page read with its neighbour is read differently
        # what the server loads and how (the server `pagemill vllm-command` describes)
        "engine.serve.model_path", "engine.serve.quantization", "engine.serve.kv_cache_dtype",
        "engine.serve.max_model_len", "engine.serve.extra_args",
        "limits.max_render_pixels",
    ),
    "fake": (),
}
# A vllm page's prompt may carry the cpu engine's OCR, and its flagged fallback is the cpu engine's reading.
DEPENDS_ON: dict[str, tuple[str, ...]] = {"vllm": ("cpu",)}
NO_OUTPUT_EFFECT = frozenset({
    "engine.kind",  # which engine runs is the fingerprint's `engine`
    "engine.vllm_url", "engine.api_key", "engine.max_in_flight", "engine.request_timeout_s",
    "engine.fake_latency_ms",
    "engine.prepare_processes", "engine.prepare_at_once",  # where and when a page's inputs are made, not what
    # where the server listens and how fast it is; speculative decoding verifies every drafted token
    "engine.serve.host", "engine.serve.port", "engine.serve.max_num_seqs", "engine.serve.gpu_memory_utilization",
    "engine.serve.speculative_method", "engine.serve.num_speculative_tokens", "engine.serve.prompt_lookup_min",
    "engine.serve.prompt_lookup_max", "engine.serve.draft_model",
    "engine.serve.max_images",  # how many images a request may carry, not what is read from them
})
# Options that steer the platform, not the parse: they are not part of a cache key.
CONTROL_OPTIONS = frozenset({"cache", "do_not_cache", "webhook_id", "cached_from", "formats"})
# Options that change only what assembly writes (figure images, kept furniture): part of the document key, not
# of a page's, so the same page's result serves both.
ASSEMBLY_OPTIONS = frozenset({"figures", "furniture", "merge_tables"})
# What the splitter writes differently into two copies of the same page: a random trailer /ID and the time.
# The document's title in its HTML (services/results/render/html.py writes it escaped, so it holds no `<`).
_HTML_TITLE = re.compile(rb"<title>[^<]*</title>")
_PDF_VOLATILE = re.compile(rb"/ID\s*\[\s*<[0-9A-Fa-f]*>\s*<[0-9A-Fa-f]*>\s*\]|/(?:CreationDate|ModDate)\s*\([^)]*\)")
_VOLATILE_WINDOW = 2048


def engine_fingerprint(engine: str, settings: Settings) -> dict[str, Any]:
    """What decides an engine's output besides the page: its version and the settings that change it, and
    the same of the engines it builds on."""
    paths = OUTPUT_SETTINGS.get(engine, ())
    # the dump only when a setting is read from it (the fake engine reads none: it was a third of its page key)
    values = settings.model_dump(mode="json", include={"engine", "limits"}) if paths else {}
    fingerprint: dict[str, Any] = {
        "engine": engine, "version": ENGINE_VERSIONS.get(engine, "0"),
        "settings": {path: _setting(values, path) for path in paths},
    }
    for dependency in DEPENDS_ON.get(engine, ()):
        fingerprint[dependency] = engine_fingerprint(dependency, settings)
    return fingerprint


def _setting(values: dict[str, Any], path: str) -> Any:
    for part in path.split("."):
        values = values[part]
    return values


def parse_options(options: dict[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (options or {}).items() if k not in CONTROL_OPTIONS}


def _digest(value: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def document_key(*, sha256: str, page_numbers: list[int], mode: str, engine: str, options: dict[str, Any],
                 settings: Settings) -> str:
    return _digest({"v": 1, "file": sha256, "pages": page_numbers, "mode": mode,
                    "engine": engine_fingerprint(engine, settings), "options": parse_options(options)})


def page_fingerprint(data: bytes) -> str:
    """sha256 of a page file. The splitter writes a random trailer `/ID` and the current time into every
    single-page PDF; they are left out so the same page of two uploads has the same fingerprint. pdfium writes
    them at the two ends of the file (the document information dictionary is its third object, the trailer its
    last lines): only the first and last `_VOLATILE_WINDOW` bytes are searched, not the page's fonts and images
    in between, whose search cost as much as the hash. So every pdfium copy keeps the fingerprint it had when the
    whole file was searched (earlier keys still match); a file that held them elsewhere would only miss the
    cache (its fingerprint would keep them), never match another page."""
    if data[:5] != b"%PDF-":
        return hashlib.sha256(data).hexdigest()
    if len(data) <= 2 * _VOLATILE_WINDOW:
        return hashlib.sha256(_PDF_VOLATILE.sub(b"", data)).hexdigest()
    view = memoryview(data)
    digest = hashlib.sha256(_PDF_VOLATILE.sub(b"", view[:_VOLATILE_WINDOW]))
    digest.update(view[_VOLATILE_WINDOW:-_VOLATILE_WINDOW])
    digest.update(_PDF_VOLATILE.sub(b"", view[-_VOLATILE_WINDOW:]))
    return digest.hexdigest()


def scope(options: dict[str, Any] | None) -> str:
    """The parse options' part of a page key, computed when the page job is made (it travels with it)."""
    return _digest({"options": {k: v for k, v in parse_options(options).items() if k not in ASSEMBLY_OPTIONS}})


def page_key(*, data: bytes, mode: str, engine: str, scope: str, settings: Settings) -> str:
    """Computed by the worker, with its own engine's fingerprint: that engine makes the result."""
    return _digest({"v": 1, "page": page_fingerprint(data), "mode": mode,
                    "engine": engine_fingerprint(engine, settings), "scope": scope})


def lookup_wanted(options: dict[str, Any] | None) -> bool:
    return (options or {}).get("cache", True) is not False


def store_wanted(options: dict[str, Any] | None) -> bool:
    return not (options or {}).get("do_not_cache", False)


def reads_cache(options: dict[str, Any] | None, settings: Settings) -> bool:
    return settings.cache.enabled and lookup_wanted(options)


def writes_cache(options: dict[str, Any] | None, settings: Settings) -> bool:
    return settings.cache.enabled and store_wanted(options)


def find_document(session: Session, tenant_id: str, key: str) -> Document | None:
    """The newest live, fully succeeded document of the tenant with this key."""
    return session.execute(
        sa.select(Document).where(
            Document.tenant_id == tenant_id, Document.cache_key == key,
            Document.status == DocumentStatus.SUCCEEDED, Document.deleted_at.is_(None),
            Document.expired_at.is_(None),
        ).order_by(Document.id.desc()).limit(1)
    ).scalar_one_or_none()


def find_page(session: Session, tenant_id: str, key: str, *, document_id: str) -> Page | None:
    """A finished page of another of the tenant's documents with this key. Repeats inside one document are
    parsed each: its pages run at the same time, so the copy would rarely be ready anyway."""
    return session.execute(
        sa.select(Page).join(Document, Document.id == Page.document_id).where(
            Page.cache_key == key, Page.status == PageStatus.SUCCEEDED, Page.result_key.is_not(None),
            Page.document_id != document_id, Document.tenant_id == tenant_id,
            Document.deleted_at.is_(None), Document.expired_at.is_(None),
        ).order_by(Page.finished_at.desc()).limit(1)
    ).scalar_one_or_none()


def retitled_html(body: bytes, title: str) -> bytes:
    """The HTML of an earlier document with `title` (the copy's filename) as its `<title>`: the first one, in
    the head, which is where the renderer writes the document's filename and the only place it shows it."""
    return _HTML_TITLE.sub(f"<title>{html.escape(title)}</title>".encode(), body, count=1)
