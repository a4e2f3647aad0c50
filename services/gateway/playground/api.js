// The pagemill API from the browser. The key goes in an Authorization header on every call, never in a URL;
// server-sent events are read with fetch streaming for the same reason (EventSource cannot send headers).
const KEY_ITEM = "pagemill.apiKey";
const base = new URL("..", window.location.href).href.replace(/\/$/, "");  // the gateway serving this page
let apiKey = sessionStorage.getItem(KEY_ITEM) || localStorage.getItem(KEY_ITEM) || "";

export function getKey() { return apiKey; }

export function setKey(key, remember) {
  apiKey = key.trim();
  sessionStorage.setItem(KEY_ITEM, apiKey);
  if (remember) localStorage.setItem(KEY_ITEM, apiKey); else localStorage.removeItem(KEY_ITEM);
}

export class ApiError extends Error {
  constructor(status, code, message) { super(`${status} ${code}: ${message}`); this.status = status; this.code = code; }
}

async function call(path, options = {}) {
  const headers = new Headers(options.headers || {});
  if (apiKey) headers.set("Authorization", `Bearer ${apiKey}`);
  const response = await fetch(base + path, { ...options, headers });
  if (!response.ok) {
    let code = `http_${response.status}`, message = response.statusText;
    try { ({ code, message } = (await response.json()).error); } catch { /* not a pagemill error body */ }
    throw new ApiError(response.status, code, message);
  }
  return response;
}

export async function upload(file, { mode, pages }) {
  const form = new FormData();
  form.append("file", file, file.name);
  if (mode) form.append("mode", mode);
  if (pages) form.append("pages", pages);
  const key = crypto.randomUUID();  // a retried upload can never make a second document
  return (await call("/v1/documents", { method: "POST", body: form, headers: { "Idempotency-Key": key } })).json();
}

export async function listDocuments(cursor) {
  const query = new URLSearchParams({ limit: "20" });
  if (cursor) query.set("cursor", cursor);
  return (await call(`/v1/documents?${query}`)).json();
}

export async function getDocument(id, wait = 0) {
  return (await call(`/v1/documents/${id}${wait ? `?wait=${wait}` : ""}`)).json();
}
export async function deleteDocument(id) { return (await call(`/v1/documents/${id}`, { method: "DELETE" })).json(); }
export async function result(id, format) { return call(`/v1/documents/${id}/result?format=${format}`); }
export async function figure(id, path) {
  return (await call(`/v1/documents/${id}/figures/${encodeURIComponent(path.replace(/^figures\//, ""))}`)).blob();
}
export async function pageImage(id, n) { return (await call(`/v1/documents/${id}/pages/${n}/image`)).blob(); }

// The result formats the server declares in its OpenAPI schema (public, no key needed).
export async function servedFormats() {
  const schema = await (await fetch(base + "/openapi.json")).json();
  const param = schema.paths["/v1/documents/{document_id}/result"].get.parameters.find((p) => p.name === "format");
  if (param.schema.enum) return param.schema.enum;
  return param.schema.pattern.replace(/^\^\(|\)\$$/g, "").split("|");
}

// Follows /events until the final event (or the stream ends); calls onEvent(type, data) per event.
export async function followEvents(id, onEvent, signal) {
  const response = await call(`/v1/documents/${id}/events`, { headers: { Accept: "text/event-stream" }, signal });
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "", type = "message", data = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end;
    while ((end = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, end).replace(/\r$/, "");
      buffer = buffer.slice(end + 1);
      if (line === "") {
        if (data.length) {
          const payload = JSON.parse(data.join("\n"));
          onEvent(type, payload.data || payload);
          if (/^document\.(succeeded|partial|failed|cancelled)$/.test(type)) { reader.cancel(); return; }
        }
        type = "message"; data = [];
      } else if (line.startsWith("event:")) type = line.slice(6).trim();
      else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
    }
  }
}
