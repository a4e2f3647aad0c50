// pagemill's TypeScript SDK: `api` is the typed client generated from the OpenAPI schema (openapi-fetch over
// src/schema.ts); submit/wait/parse/result/list are the thin hand-written layer on top, with retries,
// idempotent uploads and live progress.
import createClient, { type Client } from "openapi-fetch";
import type { components, paths } from "./schema.js";

export type { components, paths } from "./schema.js";
export { verifyWebhook, WebhookVerificationError, type VerifyOptions } from "./webhooks.js";

type Schemas = components["schemas"];
export type DocumentCreated = Schemas["DocumentCreated"];
export type DocumentRead = Schemas["DocumentRead"];
export type DocumentDeleted = Schemas["DocumentDeleted"];
export type PageRead = Schemas["PageRead"];
export type UsageRead = Schemas["UsageRead"];
export type BatchCreated = Schemas["BatchCreated"];
export type BatchItem = Schemas["BatchItem"];
export type BatchRead = Schemas["BatchRead"];
// The last three: the answer of a document's model task (`task` extract, translate, summarize).
export const FORMATS = ["markdown", "html", "latex", "json", "chunks", "extraction", "translation", "summary"] as const;
export type Format = (typeof FORMATS)[number];
export type Mode = "fast" | "balanced" | "accurate";
export type Task = "parse" | "translate" | "extract" | "summarize";
/** keep: page headers and footers stay in Markdown, LaTeX and chunks, marked */
export type Furniture = "drop" | "keep";
export type FigureAsset = Schemas["FigureAsset"];
const FINAL = new Set(["succeeded", "partial", "failed", "cancelled"]);
const JSON_FORMATS = new Set<Format>(["json", "chunks", "extraction"]);
const RETRY_STATUSES = new Set([408, 429, 500, 502, 503, 504]);

/** An `{"error": {"code", "message"}}` answer, or (status 0) a request that never got one. */
export class PagemillError extends Error {
  constructor(readonly status: number, readonly code: string, message: string,
              readonly requestId?: string, readonly retryAfter?: number) {
    super(`${status} ${code}: ${message}`);
  }
}

export interface Progress { documentId: string; status: string; pagesTotal: number; pagesDone: number; pagesFailed: number }

export interface ClientOptions {
  /** default: $PAGEMILL_BASE_URL, else http://127.0.0.1:8000 */
  baseUrl?: string;
  /** default: $PAGEMILL_API_KEY */
  apiKey?: string;
  /** retries on 429, 5xx and network errors (default 4), with jittered backoff and Retry-After honoured */
  maxRetries?: number;
  backoffMs?: number;
  fetch?: typeof globalThis.fetch;
}

export interface SubmitOptions {
  filename?: string;
  pages?: string;
  mode?: Mode;
  metadata?: Record<string, unknown>;
  webhookUrl?: string;
  cache?: boolean;
  idempotencyKey?: string;
  task?: Task;
  targetLanguage?: string;
  schema?: Record<string, unknown>;
  /** false: keep no figure images */
  figures?: boolean;
  furniture?: Furniture;
  /** false: a table that goes on over the next page stays two tables */
  mergeTables?: boolean;
}

export interface WaitOptions { timeoutMs?: number; onProgress?: (progress: Progress) => void; sse?: boolean }

export type FileInput = Blob | Uint8Array | ArrayBuffer;

function retryAfterMs(response: Response): number | undefined {
  const value = response.headers.get("retry-after");
  if (!value) return undefined;
  const seconds = Number(value);
  return Number.isFinite(seconds) ? seconds * 1000 : Math.max(0, Date.parse(value) - Date.now());
}

async function errorOf(response: Response, parsed?: unknown): Promise<PagemillError> {
  let code = `http_${response.status}`, message = response.statusText;
  try {
    const body = parsed ?? (response.bodyUsed ? undefined : await response.json());
    ({ code, message } = (body as { error: { code: string; message: string } }).error);
  } catch { /* not a pagemill error body */ }
  const after = retryAfterMs(response);
  return new PagemillError(response.status, code, message, response.headers.get("x-request-id") ?? undefined,
                           after === undefined ? undefined : after / 1000);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A fetch that retries what is worth retrying. Every attempt sends a clone of the same request, so an upload
 * keeps its Idempotency-Key and the server answers a retry with the first document. */
function retryingFetch(inner: typeof globalThis.fetch, maxRetries: number, backoffMs: number): typeof globalThis.fetch {
  return async (input, init) => {
    const request = new Request(input, init);
    for (let attempt = 0; ; attempt++) {
      const backoff = Math.random() * Math.min(30_000, backoffMs * 2 ** attempt);
      try {
        const response = await inner(request.clone());
        if (!RETRY_STATUSES.has(response.status) || attempt >= maxRetries) return response;
        await sleep(Math.min(120_000, Math.max(retryAfterMs(response) ?? 0, backoff)));
      } catch (error) {
        if (attempt >= maxRetries) throw new PagemillError(0, "connection_error", String(error));
        await sleep(backoff);
      }
    }
  };
}

function progressOf(documentId: string, data: Record<string, unknown>): Progress {
  return { documentId, status: String(data.status ?? ""), pagesTotal: Number(data.pages_total ?? 0),
           pagesDone: Number(data.pages_done ?? 0), pagesFailed: Number(data.pages_failed ?? 0) };
}

export class PagemillClient {
  /** The generated, fully typed client: every path and schema of the API. */
  readonly api: Client<paths>;
  private readonly baseUrl: string;
  private readonly headers: Record<string, string>;
  private readonly fetch: typeof globalThis.fetch;

  constructor(options: ClientOptions = {}) {
    this.baseUrl = (options.baseUrl ?? process.env.PAGEMILL_BASE_URL ?? "http://127.0.0.1:8000").replace(/\/$/, "");
    const key = options.apiKey ?? process.env.PAGEMILL_API_KEY;
    this.headers = { "User-Agent": "pagemill-typescript/0.1.0", ...(key ? { Authorization: `Bearer ${key}` } : {}) };
    this.fetch = retryingFetch(options.fetch ?? globalThis.fetch, options.maxRetries ?? 4, options.backoffMs ?? 500);
    this.api = createClient<paths>({ baseUrl: this.baseUrl, headers: this.headers, fetch: this.fetch });
  }

  private async unwrap<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
    const { data, error, response } = await call;
    if (!response.ok) throw await errorOf(response, error);
    return data as T;
  }

  /** Uploads a file; an Idempotency-Key is made unless given, so retries never make a second document. */
  async submit(file: FileInput, options: SubmitOptions = {}): Promise<DocumentCreated> {
    const form = new FormData();
    const blob = file instanceof Blob ? file : new Blob([file as BlobPart]);
    form.append("file", blob, options.filename ?? "document");
    if (options.pages) form.append("pages", options.pages);
    if (options.mode) form.append("mode", options.mode);
    if (options.metadata) form.append("metadata", JSON.stringify(options.metadata));
    if (options.webhookUrl) form.append("webhook_url", options.webhookUrl);
    if (options.task) form.append("task", options.task);
    if (options.targetLanguage) form.append("target_language", options.targetLanguage);
    if (options.schema) form.append("schema", JSON.stringify(options.schema));
    if (options.cache === false) form.append("cache", "false");
    if (options.figures === false) form.append("figures", "false");
    if (options.furniture && options.furniture !== "drop") form.append("furniture", options.furniture);
    if (options.mergeTables === false) form.append("merge_tables", "false");
    return this.unwrap(this.api.POST("/v1/documents", {
      body: form as never, bodySerializer: (body: unknown) => body as FormData,
      params: { header: { "Idempotency-Key": options.idempotencyKey ?? `pmc-${crypto.randomUUID()}` } },
    }));
  }

  async get(documentId: string, wait = 0): Promise<DocumentRead> {
    return this.unwrap(this.api.GET("/v1/documents/{document_id}", {
      params: { path: { document_id: documentId }, query: wait ? { wait } : {} },
    }));
  }

  /** Until the document ends: its server-sent events, else long-polling. */
  async wait(documentId: string, options: WaitOptions = {}): Promise<DocumentRead> {
    const deadline = options.timeoutMs === undefined ? Infinity : Date.now() + options.timeoutMs;
    let last = "";
    const report = (progress: Progress) => {
      const counts = `${progress.pagesDone}/${progress.pagesFailed}`;
      if (options.onProgress && counts !== last) { last = counts; options.onProgress(progress); }
    };
    if (options.sse !== false) {
      try { await this.followEvents(documentId, deadline, report); } catch { /* long-poll below */ }
    }
    for (;;) {
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw new PagemillError(0, "wait_timeout", `document ${documentId} has not finished`);
      const state = await this.get(documentId, Math.max(1, Math.min(30, Math.floor(remaining / 1000))));
      report(progressOf(documentId, state as unknown as Record<string, unknown>));
      if (FINAL.has(state.status)) return state;
    }
  }

  private async followEvents(documentId: string, deadline: number, report: (p: Progress) => void): Promise<void> {
    const response = await globalThis.fetch(`${this.baseUrl}/v1/documents/${documentId}/events`, {
      headers: { ...this.headers, Accept: "text/event-stream" },
    });
    if (!response.ok) throw await errorOf(response);
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "", type = "message", data: string[] = [];
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done || Date.now() > deadline) return;
        buffer += value;
        for (let end = buffer.indexOf("\n"); end >= 0; end = buffer.indexOf("\n")) {
          const line = buffer.slice(0, end).replace(/\r$/, "");
          buffer = buffer.slice(end + 1);
          if (line === "") {
            if (data.length) {
              const payload = JSON.parse(data.join("\n")) as { data?: Record<string, unknown> };
              report(progressOf(documentId, payload.data ?? (payload as Record<string, unknown>)));
              if (FINAL.has(type.replace("document.", ""))) return;
            }
            type = "message"; data = [];
          } else if (line.startsWith("event:")) type = line.slice(6).trim();
          else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
        }
      }
    } finally {
      await reader.cancel().catch(() => undefined);
    }
  }

  /** The finished document in one format: text, or parsed JSON for json and chunks. */
  async result(documentId: string, format: Format = "markdown"): Promise<unknown> {
    const response = await this.fetch(`${this.baseUrl}/v1/documents/${documentId}/result?format=${format}`,
                                      { headers: this.headers });
    if (!response.ok) throw await errorOf(response);
    const type = response.headers.get("content-type");
    return (type ? type.includes("json") : JSON_FORMATS.has(format)) ? response.json() : response.text();
  }

  async page(documentId: string, n: number): Promise<PageRead> {
    // format=json (the default) answers the page; the schema also declares its Markdown alone (format=markdown).
    return (await this.unwrap(this.api.GET("/v1/documents/{document_id}/pages/{n}", {
      params: { path: { document_id: documentId, n } },
    }))) as PageRead;
  }

  /** One figure's image: `name` as the JSON result's `figures[].path` gives it (`figures/p3-e5.png`) or bare. */
  async figure(documentId: string, name: string): Promise<Uint8Array> {
    const bare = name.replace(/^figures\//, "");
    const response = await this.fetch(`${this.baseUrl}/v1/documents/${documentId}/figures/${encodeURIComponent(bare)}`,
                                      { headers: this.headers });
    if (!response.ok) throw await errorOf(response);
    return new Uint8Array(await response.arrayBuffer());
  }

  /** Every figure image of a finished document, by path: save each at its path beside the Markdown or LaTeX. */
  async figures(documentId: string): Promise<Map<string, Uint8Array>> {
    const body = (await this.result(documentId, "json")) as { figures?: FigureAsset[] };
    const images = new Map<string, Uint8Array>();
    for (const asset of body.figures ?? []) images.set(asset.path, await this.figure(documentId, asset.path));
    return images;
  }

  async delete(documentId: string): Promise<DocumentDeleted> {
    return this.unwrap(this.api.DELETE("/v1/documents/{document_id}", { params: { path: { document_id: documentId } } }));
  }

  /** Every document, newest first, page by page. */
  async *list(pageSize = 50): AsyncGenerator<DocumentRead> {
    let cursor: string | undefined;
    do {
      const page = await this.unwrap(this.api.GET("/v1/documents", {
        params: { query: { limit: pageSize, ...(cursor ? { cursor } : {}) } },
      }));
      yield* page.data;
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
  }

  /** Upload, wait, fetch `formats` (default markdown). Throws PagemillError when the document ends failed. */
  async parse(file: FileInput, options: SubmitOptions & WaitOptions & { formats?: readonly Format[] } = {}):
      Promise<{ document: DocumentRead; results: Partial<Record<Format, unknown>> }> {
    const created = await this.submit(file, options);
    const document = await this.wait(created.id, options);
    if (document.status === "failed" || document.status === "cancelled") {
      throw new PagemillError(0, `document_${document.status}`, document.error?.message ?? document.status);
    }
    const formats = options.formats ?? ["markdown"];
    const results = await Promise.all(formats.map((format) => this.result(created.id, format)));
    return { document, results: Object.fromEntries(formats.map((format, i) => [format, results[i]])) };
  }

  /** Files and URLs (fetched by the server) as one batch: each item's document id, or the error that refused it. */
  async submitMany(files: readonly (FileInput | { file: FileInput; filename: string })[],
                   options: BatchOptions = {}): Promise<BatchCreated> {
    const form = new FormData();
    for (const item of files) {
      const [file, name] = "filename" in (item as object) ? [(item as { file: FileInput }).file,
        (item as { filename: string }).filename] : [item as FileInput, "document"];
      form.append("file", file instanceof Blob ? file : new Blob([file as BlobPart]), name);
    }
    for (const url of options.urls ?? []) form.append("url", url);
    if (options.mode) form.append("mode", options.mode);
    if (options.pages) form.append("pages", options.pages);
    if (options.metadata) form.append("metadata", JSON.stringify(options.metadata));
    if (options.webhookUrl) form.append("webhook_url", options.webhookUrl);
    return this.unwrap(this.api.POST("/v1/batches", {
      body: form as never, bodySerializer: (body: unknown) => body as FormData,
    }));
  }

  async batch(batchId: string): Promise<BatchRead> {
    return this.unwrap(this.api.GET("/v1/batches/{batch_id}", { params: { path: { batch_id: batchId } } }));
  }

  /** One batch, waited for: each accepted item's document and results (none for a failed one), in order. */
  async parseMany(files: readonly (FileInput | { file: FileInput; filename: string })[],
                  options: BatchOptions & WaitOptions & { formats?: readonly Format[] } = {}):
      Promise<{ id: string; documents: { document: DocumentRead; results: Partial<Record<Format, unknown>> }[];
                refused: BatchItem[] }> {
    const created = await this.submitMany(files, options);
    const formats = options.formats ?? ["markdown"];
    const documents = await Promise.all(created.items.filter((item) => item.document_id).map(async (item) => {
      const id = item.document_id as string;
      const document = await this.wait(id, options);
      if (document.status === "failed" || document.status === "cancelled") return { document, results: {} };
      const results = await Promise.all(formats.map((format) => this.result(id, format)));
      return { document, results: Object.fromEntries(formats.map((format, i) => [format, results[i]])) };
    }));
    return { id: created.id, documents, refused: created.items.filter((item) => !item.document_id) };
  }
}

export interface BatchOptions {
  /** http(s) URLs the server fetches (public addresses only, as webhooks). */
  urls?: readonly string[];
  mode?: Mode;
  pages?: string;
  /** The batch's own metadata, returned with it and in `batch.completed`. */
  metadata?: Record<string, unknown>;
  /** Gets every document's events and `batch.completed`. */
  webhookUrl?: string;
}
