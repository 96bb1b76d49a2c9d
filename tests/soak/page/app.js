// The soak's app page: a small multi-account app over the package, as an app would use it.
// The test serves this page on the gate's origin (context.route), so every page of the
// browser shares one IndexedDB. URL parameters:
//   db, tab, owners=a,b, skew=<ms added to Date.now()>, lease=<ms>, seed=<int>
// The test drives edits through `window.soak` and reads what happened from `soakReport`
// calls (exposed by the test) and the gate.
import init, { Outbox, classifyHttp } from "/pkg/outbox_idb.js";

const p = new URLSearchParams(location.search);
const dbName = p.get("db");
const tabId = p.get("tab");
const owners = p.get("owners").split(",");
const skew = Number(p.get("skew") || 0);
const leaseMs = Number(p.get("lease") || 2000);
let seed = Number(p.get("seed") || 1) >>> 0;

// Deterministic per page (mulberry32): backoff jitter and which stale answers are probed.
function random() {
  seed = (seed + 0x6d2b79f5) >>> 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

const now = () => Date.now() + skew;
const report = (ev) => (window.soakReport ? window.soakReport(ev).catch(() => {}) : undefined);

await init();
const outbox = await Outbox.open({
  dbName, tabId, leaseMs, now, random, backoff: { baseMs: 50, capMs: 800 }, concurrency: 3,
  // The app's records live beside the queue: each edit writes its record in the enqueue's
  // transaction, each answer reconciles it in the ACK's (the offline-first app's invariant).
  records: { version: 1, stores: [{ name: "records", keyPath: "key", indexes: [{ name: "byOwner", keyPath: "owner" }] }] },
});

/** The record writes that go with an edit. */
function writesOf(op) {
  if (op.kind === "create") return [{ store: "records", put: { owner: op.owner, ...op.body }, atTarget: true }];
  if (op.kind === "delete") return [{ store: "records", delete: op.target }];
  return [{ store: "records", patch: op.target, set: op.body }];
}

/** An answer → the record, in the ACK's transaction (never resurrecting a deleted one). */
function reconcile({ row, answer }) {
  if (answer.type === "success" && row.kind === "create") {
    return [{ store: "records", rekey: row.target, to: answer.receipt.serverId, set: { revision: answer.receipt.revision ?? null } }];
  }
  if (answer.type === "success" && row.kind === "update") {
    return [{ store: "records", patch: row.target, set: { revision: answer.receipt?.revision ?? null, error: null } }];
  }
  // A marked stale answer (see send) also leaves a mark no later answer clears.
  if (answer.type === "blocked") return [{ store: "records", patch: row.target, set: { error: answer.code, ...(answer.code === "STALE_PROBE" ? { staleProbe: row.id } : {}) } }];
  return [];
}

// This tab's own session per account (`<account>.<tab>-<random>`), as a browser tab that
// logged in holds it; a 401 makes the tab log that account in again. The transport takes
// the session of the account its flush was started for, never the one a row names: a row
// of another account handed to a flush goes out with the wrong session, and the server
// then records the effect under the flush's account (or refuses it), where the soak sees it.
const sessions = {};
const login = (owner) => (sessions[owner] = `${owner}.${tabId}-${crypto.randomUUID().slice(0, 8)}`);
owners.forEach(login);

// A second, read-only connection to look at a row as stored (never inside a transaction of
// the package's: send runs between its transactions).
let raw = null;
function rawDb() {
  if (raw) return raw;
  raw = new Promise((ok, err) => {
    const r = indexedDB.open(dbName);
    r.onsuccess = () => {
      r.result.onversionchange = () => { r.result.close(); raw = null; };
      ok(r.result);
    };
    r.onerror = () => { raw = null; err(r.error); };
  });
  return raw;
}
async function rawRows(id) {
  const db = await rawDb();
  return new Promise((ok, err) => {
    const tx = db.transaction("outbox", "readonly");
    const req = id === undefined ? tx.objectStore("outbox").getAll() : tx.objectStore("outbox").get(id);
    req.onsuccess = () => ok(req.result);
    req.onerror = () => err(req.error);
  });
}

async function localRecord(key) {
  const db = await rawDb();
  return new Promise((ok, err) => {
    const req = db.transaction("records", "readonly").objectStore("records").get(key);
    req.onsuccess = () => ok(req.result);
    req.onerror = () => err(req.error);
  });
}

/**
 * The transport. When the answer arrives after another tab took the row over (the row's
 * claim is no longer this tab's), the answer is stale: §6 says it must change nothing. Half
 * of those are replaced by a marked answer (`STALE_PROBE`), so that a stale answer which
 * did change a row is visible in the store afterwards; the other half go back as they are.
 */
async function send(owner, op) {
  let url, method;
  let payload = op.kind === "delete" ? undefined : JSON.stringify(op.body);
  if (op.kind === "create") {
    url = `/api/records/${op.body.entity}`;
    method = "POST";
  } else {
    const [entity, id] = op.target.split(":");
    url = `/api/records/${entity}/${id}`;
    method = op.kind === "delete" ? "DELETE" : "PUT";
    // A command (enqueued with `merge: false`): append one item to the record's `sets`.
    if (op.kind === "update" && op.body?.cmd === "append") {
      url += "/sets";
      method = "POST";
      payload = JSON.stringify(op.body.item);
    }
  }
  const headers = { Authorization: `Bearer ${sessions[owner]}`, "Idempotency-Key": op.id, "Content-Type": "application/json" };
  if (op.revision !== null && op.revision !== undefined) headers["If-Match"] = String(op.revision);
  // The claim this attempt goes out under, as stored: the test judges overlapping attempts
  // by it (the X-Soak-* headers are the test's, taken off before the request leaves).
  const stored = await rawRows(op.id).catch(() => undefined);
  const mine = stored?.claim?.tabId === tabId;
  headers["X-Soak-Tab"] = tabId;
  headers["X-Soak-Skew"] = String(skew);
  if (mine && typeof stored.sentAt === "number") headers["X-Soak-Claimed-At"] = String(stored.sentAt);
  // The claim as stored, for the test to judge (§5): its fence (every claim adds 1, so no
  // two attempts of an operation carry one fence) and how much of its lease is left on this
  // tab's clock (a claim's lease ends `leaseMs` after it was made, on the tab's own clock).
  if (mine && typeof stored.claim.fence === "number") headers["X-Soak-Fence"] = String(stored.claim.fence);
  if (mine && typeof stored.claim.expiresAt === "number") headers["X-Soak-Lease-Left"] = String(stored.claim.expiresAt - now());
  if (stored?.blockedCode) headers["X-Soak-Blocked"] = String(stored.blockedCode);
  // Tell the test which row went out (before it does, so a kill cannot hide it).
  await report({ type: "send", id: op.id, w: op.body?.w, conflictOf: stored?.conflict?.previousId ?? null, owner: op.owner, flushOwner: owner });
  let outcome;
  try {
    const res = await fetch(url, { method, headers, body: payload });
    const body = await res.json().catch(() => null);
    outcome = classifyHttp(res.status, res.headers, body, now());
  } catch {
    outcome = classifyHttp(0, {}, null, now());
  }
  const row = await rawRows(op.id).catch(() => undefined);
  const stale = !row || !row.claim || row.claim.tabId !== tabId;
  if (stale) {
    const probe = random() < 0.5;
    report({ type: "stale", id: op.id, outcome: outcome.type, probe });
    if (probe) return { type: "permanent", code: "STALE_PROBE" };
  }
  return outcome;
}

function prepareSuccessor({ intent, receipt }) {
  // The app writes without base revisions (last writer wins on the server).
  return { target: receipt.serverId, body: intent.body, revision: null };
}

async function findCreateReceipt({ owner, operationId }) {
  const res = await fetch(`/api/receipts/${encodeURIComponent(operationId)}`, {
    headers: { Authorization: `Bearer ${sessions[owner]}` },
  });
  if (res.status === 404) return null;
  if (!res.ok) throw new Error(`receipt lookup failed: ${res.status}`);
  return res.json();
}

async function flushOnce(owner) {
  const r = await outbox.flush({ owner, send: (op) => send(owner, op), prepareSuccessor, findCreateReceipt, reconcile });
  if (r.held > 0) {
    // A 401: log this account in again, then resume its held rows (§6, §11).
    login(owner);
    await outbox.resumeHeld(owner);
  }
  return r;
}

let looping = false;
async function loop() {
  looping = true;
  while (looping) {
    for (const o of owners) {
      try {
        await flushOnce(o);
      } catch (e) {
        report({ type: "error", where: "flush", code: e.code ?? "", message: String(e.message ?? e) });
      }
    }
    await new Promise((r) => setTimeout(r, 5 + Math.floor(random() * 40)));
  }
}

window.soak = {
  outbox, owners, tabId, now, flushOnce, rawRows, login,
  startLoop() { if (!looping) window.__loop = loop(); },
  async stopLoop() { looping = false; await window.__loop; },
  /**
   * The scope's rows before and after one enqueue (what the enqueue replaced). `withRevision`
   * sends the update with the local record's revision as its base (`If-Match`); a command
   * (`body.cmd`) appends its item to the local record's `sets` too. The model locks the
   * record while it edits it, so reading the local record first is the app's own read.
   */
  async enqueue(op, withRevision = false) {
    const scope = async () => (await outbox.rows(op.owner)).filter((r) => r.target === op.target).map((r) => r.id);
    const before = op.target ? await scope() : [];
    let writes = writesOf(op);
    if (op.target && (withRevision || op.body?.cmd)) {
      const local = await localRecord(op.target);
      if (withRevision && typeof local?.revision === "number") op = { ...op, revision: local.revision };
      if (op.body?.cmd === "append") writes = [{ store: "records", patch: op.target, set: { sets: [...(local?.sets ?? []), op.body.item] } }];
    }
    // Conflict successors among the rows this enqueue may replace: one may be merged away
    // before it was ever sent, and the soak follows the operation by its new id.
    const conflicts = op.target
      ? Object.fromEntries((await outbox.rows(op.owner)).filter((r) => r.target === op.target && r.conflict?.previousId).map((r) => [r.id, r.conflict.previousId]))
      : {};
    const row = await outbox.enqueue(op, { writes });
    const after = op.target ? await scope() : [];
    return { row, before, after, conflicts };
  },
  /** The user's re-save of a blocked row: its new body, and the record, in one transaction. */
  async retryBlocked(owner, id, body) {
    const row = (await outbox.rows(owner)).find((r) => r.id === id);
    const writes = row && row.kind !== "delete" ? [{ store: "records", patch: row.target, set: { ...body, error: null } }] : [];
    return outbox.retryBlocked(owner, id, body, { writes });
  },
  /** A discarded create takes its record with it, in the same transaction. */
  async discard(owner, id) {
    const row = (await outbox.rows(owner)).find((r) => r.id === id);
    const writes = row?.kind === "create" ? [{ store: "records", delete: row.target }] : [];
    return outbox.discard(owner, id, { writes });
  },
  /**
   * The owner's queue rows and local records as one snapshot: one readonly transaction over
   * both stores (other tabs keep flushing meanwhile, so two reads could disagree).
   */
  async local(owner) {
    const db = await rawDb();
    return new Promise((ok, err) => {
      const tx = db.transaction(["outbox", "records"], "readonly");
      const rows = tx.objectStore("outbox").index("byOwner").getAll(owner);
      const recs = tx.objectStore("records").index("byOwner").getAll(owner);
      tx.oncomplete = () => ok({ rows: rows.result, recs: recs.result });
      tx.onerror = () => err(tx.error);
    });
  },
  /**
   * An edit of a record the app knows only by its `pending:` target: enqueued there while
   * the outbox still holds rows of that target, else `{vanished: true}` and the app uses the
   * server id from the create's receipt (see tests/e2e/soak-findings.spec.ts for why).
   */
  async enqueueEdit(op) {
    const rows = await outbox.rows(op.owner);
    if (!rows.some((r) => r.target === op.target)) return { vanished: true };
    return window.soak.enqueue(op);
  },
  resumeHeld: (owner) => { login(owner); return outbox.resumeHeld(owner); },
  ready: true,
};
