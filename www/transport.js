// The demo's transport and ports, shared by the page (app.js), the service worker (sw.js) and
// a dedicated worker (worker.js): each is a tab of its own over the same outbox database.
//
// The session (the bearer token) is never stored in a row: `send` reads it when it sends.
// Pages keep it in memory and also save it in a small database of their own, so that the
// service worker, which has no page to ask when it wakes up for a `sync` event, can read the
// current one (an app with cookie sessions needs none of this: the browser adds them).
import { classifyHttp } from "/pkg/outbox_idb.js";

/**
 * The demo's own records, kept in the outbox's database (every context opens it with this,
 * so that a record and its queue row share transactions).
 */
export const RECORDS_SCHEMA = {
  version: 1,
  stores: [{ name: "records", keyPath: "key", indexes: [{ name: "byOwner", keyPath: "owner" }] }],
};

/**
 * An answer → the local record, in the ACK's own transaction (and only if the claim is still
 * this context's). `rekey` and `patch` change a record only if it exists: a record the person
 * deleted meanwhile stays deleted, whatever answer arrives late.
 */
export function reconcile({ row, answer }) {
  if (answer.type === "success") {
    const receipt = answer.receipt ?? {};
    const set = { revision: receipt.revision ?? null, error: null };
    if (row.kind === "create") return [{ store: "records", rekey: row.target, to: receipt.serverId, set }];
    if (row.kind === "update") return [{ store: "records", patch: row.target, set }];
    return [];
  }
  if (answer.type === "blocked") return [{ store: "records", patch: row.target, set: { error: answer.code } }];
  return []; // a conflict: a successor carrying the server's revision is queued
}

/** The demo gate's request for an operation: `{url, method, body}`. */
export function requestOf(op) {
  if (op.kind === "create") return { url: `/api/records/${op.body.entity}`, method: "POST", body: JSON.stringify(op.body) };
  const [entity, id] = op.target.split(":");
  const url = `/api/records/${entity}/${id}`;
  if (op.kind === "delete") return { url, method: "DELETE", body: undefined };
  // A command (enqueued with merge: false): appends one set; every click counts.
  if (op.body?.logSet) return { url: `${url}/sets`, method: "POST", body: JSON.stringify(op.body.logSet) };
  return { url, method: "PUT", body: JSON.stringify(op.body) };
}

/** The Background Sync tag pages register; the service worker flushes when it fires. */
export const SYNC_TAG = "outbox-flush";

/**
 * `send`, `prepareSuccessor` and `findCreateReceipt` for the demo's gate.
 * `session()` returns the current `{user, token}` (or a promise of it, or null when logged
 * out); `offline()` is the demo's own "Offline" switch (pages only); `timeoutMs` gives up
 * on a request that hangs (the service worker: a hung send would keep its flush past its
 * deadline; the row is retried later and the gate answers a repeat from its ledger).
 */
export function transport({ session, offline = () => false, timeoutMs }) {
  const auth = (s) => ({ Authorization: `Bearer ${s.token}` });

  /** send(op) → Outcome: the operation id travels as Idempotency-Key. */
  async function send(op) {
    if (offline()) return { type: "transient", code: "OFFLINE" };
    const s = await session();
    // §11: never send one account's row with another account's session. A flush that was
    // running when the person switched accounts gets "auth": the row is held until that
    // account is logged in again.
    if (!s || op.owner !== s.user) return { type: "auth" };
    const { url, method, body } = requestOf(op);
    const headers = { ...auth(s), "Idempotency-Key": op.id, "Content-Type": "application/json" };
    if (op.revision !== null && op.revision !== undefined) headers["If-Match"] = String(op.revision);
    try {
      const signal = timeoutMs ? AbortSignal.timeout(timeoutMs) : undefined;
      const res = await fetch(url, { method, headers, body, signal });
      const answer = await res.json().catch(() => null);
      return classifyHttp(res.status, res.headers, answer, Date.now());
    } catch {
      return classifyHttp(0, {}, null, Date.now()); // network error: transient
    }
  }

  /** An intent of a record created meanwhile, turned into its real request. */
  function prepareSuccessor({ intent, receipt }) {
    // A command appends whatever the record's revision; an edit is based on the create's.
    const revision = intent.body?.logSet ? null : receipt.revision ?? null;
    return { target: receipt.serverId, body: intent.body, revision };
  }

  /** The receipt of a create whose row vanished (another tab applied it). */
  async function findCreateReceipt({ owner, operationId }) {
    const s = await session();
    if (!s || owner !== s.user) throw new Error("that account is logged out"); // row left as it is
    const res = await fetch(`/api/receipts/${encodeURIComponent(operationId)}`, { headers: auth(s) });
    if (res.status === 404) return null;
    if (!res.ok) throw new Error(`receipt lookup failed: ${res.status}`);
    return res.json();
  }

  return { send, prepareSuccessor, findCreateReceipt, reconcile };
}

// ---- the current session, for the service worker -------------------------------------

function sessionDb() {
  return new Promise((ok, err) => {
    const r = indexedDB.open("outbox-demo-sessions", 1);
    r.onupgradeneeded = () => r.result.createObjectStore("sessions");
    r.onsuccess = () => ok(r.result);
    r.onerror = () => err(r.error);
  });
}

/** Saves the current session of the outbox database `dbName` (null: logged out), with the
 * demo's Offline switch. */
export async function saveSession(dbName, session) {
  const db = await sessionDb();
  await new Promise((ok, err) => {
    const tx = db.transaction("sessions", "readwrite");
    const value = session ? { user: session.user, token: session.token, offline: !!session.offline } : null;
    tx.objectStore("sessions").put(value, dbName);
    tx.oncomplete = ok;
    tx.onerror = () => err(tx.error);
  });
  db.close();
}

/** The session saved for `dbName`, or null. */
export async function loadSession(dbName) {
  const db = await sessionDb();
  const value = await new Promise((ok, err) => {
    const r = db.transaction("sessions").objectStore("sessions").get(dbName);
    r.onsuccess = () => ok(r.result ?? null);
    r.onerror = () => err(r.error);
  });
  db.close();
  return value;
}
