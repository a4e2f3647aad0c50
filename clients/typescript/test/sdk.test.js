// The TypeScript SDK against a running pagemill (tests/clients/test_typescript_sdk.py starts one and sets
// PAGEMILL_BASE_URL, PAGEMILL_API_KEY, PAGEMILL_ADMIN_KEY and PAGEMILL_TEST_PDF): run with `node --test test/`.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { test } from "node:test";
import { PagemillClient, PagemillError, verifyWebhook, WebhookVerificationError } from "../dist/index.js";

const baseUrl = process.env.PAGEMILL_BASE_URL;
const pdf = new Blob([await readFile(process.env.PAGEMILL_TEST_PDF)], { type: "application/pdf" });
const client = new PagemillClient();  // base URL and key from the environment

// Answers of model tasks: only a document submitted with that task has them.
const TASK_ANSWERS = new Set(["extraction", "translation", "summary"]);

async function servedFormats() {
  const schema = await (await fetch(`${baseUrl}/openapi.json`)).json();
  const param = schema.paths["/v1/documents/{document_id}/result"].get.parameters.find((p) => p.name === "format");
  const ref = param.schema.$ref;  // the format enum is a component of its own
  return (ref ? schema.components.schemas[ref.split("/").pop()] : param.schema).enum
    .filter((format) => !TASK_ANSWERS.has(format));
}

async function tenant(name, limits) {
  const admin = { Authorization: `Bearer ${process.env.PAGEMILL_ADMIN_KEY}`, "Content-Type": "application/json" };
  const made = await (await fetch(`${baseUrl}/v1/admin/tenants`, { method: "POST", headers: admin,
    body: JSON.stringify({ name, limits }) })).json();
  const key = await (await fetch(`${baseUrl}/v1/admin/tenants/${made.id}/keys`, { method: "POST", headers: admin,
    body: JSON.stringify({ name: "ts" }) })).json();
  return key.key;
}

test("parse waits with progress and fetches every format the server has", async () => {
  const formats = await servedFormats();
  const seen = [];
  const { document, results } = await client.parse(pdf, { filename: "multi_page.pdf", pages: "1-3", formats,
    metadata: { ticket: 9 }, onProgress: (p) => seen.push(p.pagesDone), timeoutMs: 120_000 });
  assert.equal(document.status, "succeeded");
  assert.deepEqual(document.metadata, { ticket: 9 });
  assert.equal(seen.at(-1), 3);
  assert.equal(results.markdown.match(/<!-- page/g).length, 3);
  assert.deepEqual(results.json.pages.map((p) => p.page_number), [1, 2, 3]);
  for (const format of formats) assert.ok(results[format]);
  const page = await client.page(document.id, 2);
  assert.equal(page.page_number, 2);
  // the generated client, typed from the OpenAPI schema, is there for every other call
  const { data } = await client.api.GET("/v1/documents/{document_id}", { params: { path: { document_id: document.id } } });
  assert.equal(data.pages_done, 3);
});

test("list pages through every document, delete erases, errors are typed", async () => {
  const own = new PagemillClient({ apiKey: await tenant(`ts-list-${Date.now()}`) });
  const ids = [];
  for (const pages of ["1", "2", "3"]) ids.push((await own.submit(pdf, { filename: "a.pdf", pages, cache: false })).id);
  const listed = [];
  for await (const document of own.list(2)) listed.push(document.id);
  assert.deepEqual(listed, [...ids].reverse());
  await own.wait(ids[0], { timeoutMs: 120_000 });
  assert.equal((await own.delete(ids[0])).deleted, true);
  await assert.rejects(own.get(ids[0]), (error) => error instanceof PagemillError && error.code === "not_found"
                                                  && error.status === 404 && Boolean(error.requestId));
  const stranger = new PagemillClient({ apiKey: "pm_wrong" });
  await assert.rejects(stranger.get(ids[1]), (error) => error.code === "unauthorized");
});

test("a 429 is retried after Retry-After", async () => {
  const apiKey = await tenant(`ts-rate-${Date.now()}`, { requests_per_minute: 10 });
  const impatient = new PagemillClient({ apiKey, maxRetries: 0 });
  for (let i = 0; i < 10; i++) await impatient.submit(pdf, { filename: "a.pdf", pages: "1" });
  let refused;
  await assert.rejects(impatient.submit(pdf, { filename: "a.pdf", pages: "1" }), (error) => {
    refused = error;
    return error.code === "rate_limited" && error.retryAfter >= 1;
  });
  const started = Date.now();
  const created = await new PagemillClient({ apiKey, maxRetries: 3 }).submit(pdf, { filename: "a.pdf", pages: "1" });
  assert.ok(created.id);
  assert.ok(Date.now() - started >= (refused.retryAfter - 1.5) * 1000);
});

test("a real webhook delivery verifies; a forged one does not", async () => {
  const { data: self } = await client.api.GET("/v1/tenant");
  const secret = self.webhook_secret;
  const received = [];
  const server = createServer((request, response) => {
    const chunks = [];
    request.on("data", (chunk) => chunks.push(chunk));
    request.on("end", () => { received.push({ headers: request.headers, body: Buffer.concat(chunks).toString() }); response.writeHead(204).end(); });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const webhookUrl = `http://127.0.0.1:${server.address().port}/hooks`;
    const { document } = await client.parse(pdf, { filename: "a.pdf", pages: "1", webhookUrl, timeoutMs: 120_000 });
    const deadline = Date.now() + 60_000;
    let final;
    while (!(final = received.find((r) => JSON.parse(r.body).type === "document.succeeded")) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    assert.ok(final, "the final webhook arrived");
    const event = verifyWebhook(final.body, final.headers, secret);
    assert.equal(event.data.document_id, document.id);
    assert.throws(() => verifyWebhook(final.body.replace("succeeded", "failed"), final.headers, secret), WebhookVerificationError);
    assert.throws(() => verifyWebhook(final.body, final.headers, `whsec_${"A".repeat(32)}`), WebhookVerificationError);
    assert.throws(() => verifyWebhook(final.body, { ...final.headers, "webhook-timestamp": "1" }, secret), WebhookVerificationError);
  } finally {
    server.close();
  }
});

test("an upload whose answer was lost is retried into the same document", { skip: !process.env.PAGEMILL_FLAKY_URL }, async () => {
  // PAGEMILL_FLAKY_URL: a proxy that forwards the next upload to the platform and drops the answer
  const apiKey = await tenant(`ts-flaky-${Date.now()}`);
  const flaky = new PagemillClient({ baseUrl: process.env.PAGEMILL_FLAKY_URL, apiKey, backoffMs: 50 });
  const created = await flaky.submit(pdf, { filename: "a.pdf", pages: "1-2", cache: false });
  const ids = [];
  for await (const document of new PagemillClient({ apiKey }).list()) ids.push(document.id);
  assert.deepEqual(ids, [created.id]);
});

test("the Standard Webhooks test vector verifies", () => {
  const headers = { "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek", "webhook-timestamp": "1614265330",
                    "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=" };
  const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
  assert.deepEqual(verifyWebhook('{"test": 2432232314}', headers, secret, { now: 1614265340 }), { test: 2432232314 });
  assert.throws(() => verifyWebhook('{"test": 2432232314}', headers, secret, { now: 1614265330 + 301 }), WebhookVerificationError);
});

test("figures and furniture are upload options; figures are fetched by their path", async () => {
  const { document, results } = await client.parse(pdf, { filename: "a.pdf", pages: "1", figures: false,
    furniture: "keep", formats: ["json"], timeoutMs: 120_000 });
  assert.equal(document.status, "succeeded");
  assert.deepEqual(results.json.figures, []);
  assert.equal((await client.figures(document.id)).size, 0);
  await assert.rejects(client.figure(document.id, "figures/p1-e1.png"),
    (error) => error instanceof PagemillError && error.code === "not_found");
});

test("parseMany parses a batch and reports the items it refused", async () => {
  const { id, documents, refused } = await client.parseMany([{ file: pdf, filename: "multi_page.pdf" },
    { file: new Blob(["plain words"]), filename: "notes.txt" }], { pages: "1-2", metadata: { run: 3 },
    formats: ["markdown", "json"], timeoutMs: 120_000 });
  assert.equal(documents.length, 1);
  assert.equal(documents[0].document.status, "succeeded");
  assert.deepEqual(documents[0].results.json.pages.map((p) => p.page_number), [1, 2]);
  assert.deepEqual(refused.map((item) => [item.index, item.error.code]), [[1, "unsupported_media_type"]]);
  const batch = await client.batch(id);
  assert.equal(batch.status, "completed");
  assert.equal(batch.counts.succeeded, 1);
  assert.deepEqual(batch.metadata, { run: 3 });
});
