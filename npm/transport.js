// httpTransport (issue 34): the `send` and `findCreateReceipt` every app would otherwise
// write — URL and method per operation, the idempotency key, the base revision, a JSON
// body, headers read at send time, every answer classified, and a request that gives up
// well before its claim's lease ends.

import { invalidArgument, readArgument } from "./errors.js";
import { DEFAULT_LEASE_MS } from "./configure.js";
import { classifyHttp } from "./outbox_idb.js";

/** The method of each kind unless configured otherwise. */
const DEFAULT_METHODS = { create: "POST", update: "PUT", delete: "DELETE" };

/** The answer when the request gave up: transient, retried after the backoff. */
const TIMED_OUT = Object.freeze({ type: "transient", code: "TIMEOUT" });

/** A lookup refused for a lack of credentials: the row is left as it is, asked again later. */
class NoCredentials extends Error {}

export function httpTransport(options) {
  if (typeof options !== "object" || options === null) throw invalidArgument("httpTransport needs { url: (op) => string }");
  // Read once, here: a throwing getter or Proxy trap is INVALID_ARGUMENT now, not a failed
  // send later. The functions are still called on `options` (`this`), as the app wrote them.
  const config = readArgument("httpTransport options", () => {
    const { url, fetch, method, body, headers, receiptUrl, timeoutMs } = options;
    const methods = typeof method === "function" ? method : { ...DEFAULT_METHODS, ...method };
    return { url, fetch, methods, body, headers, receiptUrl, timeoutMs };
  });
  if (typeof config.url !== "function") throw invalidArgument("httpTransport needs { url: (op) => string }");
  const fetchImpl = config.fetch ?? ((...args) => globalThis.fetch(...args));
  const { methods } = config;
  const methodOf = typeof methods === "function" ? methods : (op) => methods[op.kind];
  const bodyOf = config.body ?? ((op) => (op.kind === "delete" ? undefined : op.body));
  /** The app's headers for an owner, read now; `null`: no credentials for that owner. */
  const appHeaders = async (about) => (config.headers ? await config.headers.call(options, about) : {});

  /** Runs `request(signal)`, aborting it after `timeoutMs` or when `outer` aborts. */
  async function withTimeout(timeoutMs, outer, request) {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), timeoutMs);
    const abort = () => controller.abort();
    outer?.addEventListener("abort", abort, { once: true });
    try {
      return await request(controller.signal);
    } finally {
      clearTimeout(timer);
      outer?.removeEventListener("abort", abort);
    }
  }

  /** send(op, {leaseMs, signal?}) → Outcome; the operation id travels as Idempotency-Key. */
  async function send(op, context = {}) {
    const own = await appHeaders(op);
    // §11: no session for this owner (logged out, another account): the row is held
    // until its owner is logged in again, never sent with another account's session.
    if (own === null) return { type: "auth" };
    const body = bodyOf(op);
    const headers = { ...own, "Idempotency-Key": op.id };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (op.revision !== null && op.revision !== undefined) headers["If-Match"] = String(op.revision);
    const timeoutMs = config.timeoutMs ?? (context.leaseMs ?? DEFAULT_LEASE_MS) / 2;
    let timedOut = false;
    try {
      return await withTimeout(timeoutMs, context.signal, async (signal) => {
        signal.addEventListener("abort", () => (timedOut = true), { once: true });
        const init = { method: methodOf(op), headers, signal };
        if (body !== undefined) init.body = JSON.stringify(body);
        const res = await fetchImpl(String(config.url.call(options, op)), init);
        const answer = await res.json().catch(() => null);
        if (timedOut) return TIMED_OUT; // the body was cut off: the answer is unknown
        return classifyHttp(res.status, res.headers, answer);
      });
    } catch {
      return timedOut ? TIMED_OUT : classifyHttp(0); // no answer: transient NETWORK
    }
  }

  const transport = { send };
  if (typeof config.receiptUrl === "function") {
    /** The stored answer of a create another tab applied, or `null` when the server has none. */
    transport.findCreateReceipt = async ({ owner, operationId }) => {
      const headers = await appHeaders({ owner });
      if (headers === null) throw new NoCredentials(`tab-outbox: no credentials for ${owner}: receipt not looked up`);
      const timeoutMs = config.timeoutMs ?? DEFAULT_LEASE_MS / 2;
      return withTimeout(timeoutMs, undefined, async (signal) => {
        const res = await fetchImpl(String(config.receiptUrl.call(options, operationId, owner)), { headers, signal });
        if (res.status === 404) return null; // unknown: the intent is blocked, kept
        if (!res.ok) throw new Error(`tab-outbox: receipt lookup answered ${res.status}`); // asked again later
        return res.json();
      });
    };
  }
  return transport;
}
