// Verifying pagemill's webhooks (Standard Webhooks: HMAC-SHA256 of "id.timestamp.body", base64), node:crypto only.
import { createHmac, timingSafeEqual } from "node:crypto";

export class WebhookVerificationError extends Error {}

export interface VerifyOptions {
  /** seconds a timestamp may be off (replays); default 300 */
  toleranceS?: number;
  /** the current time in seconds (tests) */
  now?: number;
}

type HeaderBag = Headers | Record<string, string | string[] | undefined>;

function header(headers: HeaderBag, name: string): string | undefined {
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  const found = Object.entries(headers).find(([key]) => key.toLowerCase() === name);
  const value = found?.[1];
  return Array.isArray(value) ? value[0] : value;
}

/** The webhook's parsed JSON body once its signature and timestamp check out; throws WebhookVerificationError.
 * `payload` is the raw body exactly as received; `secret` the endpoint's `whsec_...` secret. */
export function verifyWebhook(payload: string | Uint8Array, headers: HeaderBag, secret: string,
                              options: VerifyOptions = {}): unknown {
  const id = header(headers, "webhook-id");
  const timestamp = header(headers, "webhook-timestamp");
  const signatures = header(headers, "webhook-signature");
  if (!id || !timestamp || !signatures) throw new WebhookVerificationError("missing webhook-id, -timestamp or -signature");
  const sentAt = Number(timestamp);
  const now = options.now ?? Date.now() / 1000;
  if (!Number.isInteger(sentAt)) throw new WebhookVerificationError("webhook-timestamp is not a number");
  if (Math.abs(now - sentAt) > (options.toleranceS ?? 300)) {
    throw new WebhookVerificationError("webhook-timestamp is too old or in the future (a replay?)");
  }
  const body = typeof payload === "string" ? Buffer.from(payload, "utf8") : Buffer.from(payload);
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  const expected = createHmac("sha256", key).update(`${id}.${timestamp}.`).update(body).digest();
  for (const candidate of signatures.split(" ")) {
    const [version, signature] = candidate.split(",", 2);
    if (version !== "v1" || !signature) continue;
    const given = Buffer.from(signature, "base64");
    if (given.length === expected.length && timingSafeEqual(given, expected)) return JSON.parse(body.toString("utf8"));
  }
  throw new WebhookVerificationError("no signature matches");
}
