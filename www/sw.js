// The demo's service worker: one more tab over the page's outbox database. It flushes the
// logged-in account's rows when the browser fires the Background Sync event, when it starts,
// and when a page asks (a message). Claims, leases and fences make it safe to flush while
// pages flush the same queue, and harmless to be killed mid-flush: its claimed rows are
// taken over by any tab once the lease has passed.
//
// Registered by app.js as a module worker: `/sw.js?db=<name>&lease=<ms>`.
import { openDemoOutbox } from "./outbox-config.js";
import { SYNC_TAG, loadSession, transport } from "./transport.js";

const params = new URL(self.location.href).searchParams;
const dbName = params.get("db") || "outbox-demo";
const leaseMs = Number(params.get("lease") || 10000);
/** How long one flush may take new rows. Chromium ends a `sync` event after a few minutes
 * (and stops an idle worker after 30 s); stopping early leaves the rest queued. */
const BUDGET_MS = 20_000;

// Top-level await is not allowed in a service worker: the module is loaded on first use.
let opening = null;
function openOutbox() {
  // The page's configuration (outbox-config.js): the same schema, owner and ports.
  opening ??= openDemoOutbox({
    dbName, tabId: `sw-${crypto.randomUUID()}`, leaseMs, backoff: { baseMs: 1000, capMs: 30000 },
    session: () => loadSession(dbName), timeoutMs: 15_000,
  }).catch((e) => {
    opening = null;
    throw e;
  });
  return opening;
}

const ports = transport({ session: () => loadSession(dbName), timeoutMs: 15_000 });

// Test hook: `holdSends()` makes every later send wait for ever, like a network that never
// answers (the end-to-end tests stop the worker in that state).
let sendsHeld = false;
let waiting = 0;
async function send(op) {
  if (sendsHeld) {
    waiting += 1;
    await new Promise(() => {});
  }
  return ports.send(op);
}

/** What this worker's flushes did since it started (console and tests). */
const history = [];

/** One flush at a time in this worker; a request made meanwhile runs after it. */
let last = Promise.resolve();
function flushAll(why) {
  const run = last.catch(() => {}).then(() => flushOnce(why));
  last = run;
  return run;
}

/** Flushes every owner this worker can send for: the account of the current session. */
async function flushOnce(why) {
  const session = await loadSession(dbName);
  if (!session) return { why, owner: null, report: null, left: 0 };
  const outbox = await openOutbox();
  if (session.offline) {
    // The demo's Offline switch is on: send nothing, as the page would not.
    history.push({ why, offline: true, claimed: 0, succeeded: 0, deferred: 0 });
    return { why, owner: session.user, tabId: outbox.tabId, report: null, left: (await outbox.metrics(session.user)).byState.queued };
  }
  // The configured ports; `send` wraps the configured one with the test hook below.
  // A `sync` event is the browser saying the network is back: that flush is online, whatever
  // the worker's navigator.onLine still reads (Chromium may update it later in a worker).
  const network = why === "sync" ? { offline: false } : {};
  const report = await outbox.flush({ owner: session.user, send, deadline: Date.now() + BUDGET_MS, ...network });
  const m = await outbox.metrics(session.user);
  history.push({ why, online: navigator.onLine, claimed: report.claimed, succeeded: report.succeeded, deferred: report.deferred });
  return { why, owner: session.user, tabId: outbox.tabId, report, left: m.byState.queued };
}

self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

self.addEventListener("sync", (event) => {
  if (event.tag !== SYNC_TAG) return;
  event.waitUntil(
    flushAll("sync").then((r) => {
      // Rows left queued (deadline, deferred answers): a rejected `sync` is fired again
      // later by the browser, unless this was its last try.
      if (r.left > 0 && !event.lastChance) throw new Error(`${r.left} row(s) left for a later sync`);
    }),
  );
});

self.addEventListener("message", (event) => {
  if (event.data?.type !== "flush") return;
  const reply = event.ports[0];
  event.waitUntil(
    flushAll("message").then(
      (r) => reply?.postMessage(r),
      (e) => reply?.postMessage({ error: `${e.code ?? ""} ${e.message}` }),
    ),
  );
});

// Started (by any event, or after the browser stopped it): flush what is waiting. No event
// keeps the worker alive for this one; if it is stopped meanwhile the claims expire.
flushAll("start").catch(() => {});

// Console and test hook.
self.outboxSw = {
  flushAll, openOutbox, dbName, history,
  holdSends: () => { sendsHeld = true; },
  waiting: () => waiting,
};
