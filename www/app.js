// Demo records editor over the outbox package, exactly as an app would use it.
// URL parameters (used by the end-to-end tests; the defaults suit a person):
//   db=<IndexedDB name>  tab=<tab id>  users=alice,bob  lease=<ms>
//   clock=<epoch ms>     the page's clock is window.__now, moved by hand (tests)
//   autoflush=0          no timer-driven flush (tests flush explicitly)
//   turnWait=<ms>        the outbox's turnWaitMs (0: this tab's flushes never wait for another's)
//   sw=1 | sw=0          register the flushing service worker (default: when autoflush is on)
import init from "/pkg/index.js";
import { openDemoOutbox } from "./outbox-config.js";
import { SYNC_TAG, reconcile, saveSession, transport } from "./transport.js";

const params = new URLSearchParams(location.search);
const users = (params.get("users") || "alice,bob").split(",");
const manualClock = params.has("clock");
window.__now = Number(params.get("clock")) || Date.now();
const autoflush = params.get("autoflush") !== "0";
const useSw = params.has("sw") ? params.get("sw") === "1" : autoflush;
const dbName = params.get("db") || "outbox-demo";
const leaseMs = Number(params.get("lease") || 10000);

const $ = (sel) => document.querySelector(sel);
const session = { user: users[0], token: "" };
let offline = false;

let sessionSaved = Promise.resolve();
let swReady = null; // the service worker's registration, once active (sw.js)

function newSession() {
  session.token = `${session.user}.${crypto.randomUUID().slice(0, 8)}`;
  shareWithWorker();
}

/** The service worker reads the current session when it sends (never from a row), and
 * honours the demo's Offline switch as the page does. */
function shareWithWorker() {
  if (useSw) sessionSaved = saveSession(dbName, { ...session, offline }).catch((e) => log(`session not saved: ${e.message}`));
}
newSession();

await init();
// The shared configuration (outbox-config.js): the records schema, the owner (this session's
// account; nobody while the Offline switch is on), send and the ports, as in the workers.
const outbox = await openDemoOutbox({
  dbName,
  tabId: params.get("tab") || undefined,
  leaseMs,
  now: manualClock ? () => window.__now : () => Date.now(),
  backoff: { baseMs: 1000, capMs: 30000 },
  ...(params.has("turnWait") ? { turnWaitMs: Number(params.get("turnWait")) } : {}),
  session: () => session,
  offline: () => offline,
  // Flushes on its own: after edits, when back online, when shown, every ~2 s, when a
  // retry is due; after a flush that leaves rows waiting it asks for Background Sync.
  autoFlush: autoflush
    ? { intervalMs: 2000, syncTag: SYNC_TAG, onError: (e) => log(`flush failed: ${e.code ?? ""} ${e.message}`) }
    : false,
});

const auth = () => ({ Authorization: `Bearer ${session.token}` });

function log(text) {
  const li = document.createElement("li");
  li.textContent = `${new Date().toLocaleTimeString()} ${text}`;
  $("#log").prepend(li);
  while ($("#log").children.length > 60) $("#log").lastChild.remove();
}

// ---- the app's ports (shared with the service worker: transport.js) -------------------

const { send } = transport({ session: () => session, offline: () => offline }); // the test hook below

let running = null;
async function flushNow(extra = {}) {
  if (offline) return null;
  if (running) await running.catch(() => {});
  running = outbox.flush(extra); // the configured owner, send and ports
  try {
    const r = await running;
    if (r.claimed || r.converted) {
      log(`flush: sent ${r.claimed}, ok ${r.succeeded}, deferred ${r.deferred}, held ${r.held}, ` +
          `blocked ${r.blocked}, conflicts ${r.conflicts}, stale ${r.stale}`);
    }
    if (r.deferred) requestSync(); // retried later, also with every tab closed
    await refresh();
    return r;
  } finally {
    running = null;
  }
}

// ---- edits ----------------------------------------------------------------------------

function fieldOf(entity, value) {
  return entity === "workout" ? { weight: Number(value) } : { title: String(value) };
}

const RECORDS = "records";

async function createRecord(entity, value) {
  const fields = { entity, ...fieldOf(entity, value) };
  const record = { owner: session.user, ...fields, revision: null, sets: 0, error: null };
  const row = await outbox.enqueue(
    { owner: session.user, kind: "create", body: fields },
    { writes: [{ store: RECORDS, put: record, atTarget: true }] }, // keyed by its pending: target
  );
  log(`create ${entity} queued as ${row.target}`);
  afterEdit();
  return row;
}

async function updateRecord(target, patch, revision) {
  const row = await outbox.enqueue(
    { owner: session.user, kind: "update", target, body: patch, revision },
    { writes: [{ store: RECORDS, patch: target, set: { ...patch, error: null } }] },
  );
  afterEdit();
  return row;
}

/** Runs read-then-write edits of this page one after another (a failed one does not stop the next). */
let turns = Promise.resolve();
function inTurn(edit) {
  const run = turns.then(edit);
  turns = run.catch(() => {});
  return run;
}

/**
 * "Log a set": a command, so `merge: false` — two clicks offline are two sets online.
 * The count is read, then written by the enqueue: two transactions. Two quick clicks would
 * both read the old count and both write count + 1, so the clicks take turns.
 */
function logSet(target, weight) {
  return inTurn(async () => {
    const sets = ((await outbox.record(RECORDS, target))?.sets ?? 0) + 1;
    const row = await outbox.enqueue(
      { owner: session.user, kind: "update", target, body: { logSet: { weight } }, merge: false },
      { writes: [{ store: RECORDS, patch: target, set: { sets } }] },
    );
    afterEdit();
    return row;
  });
}


async function deleteRecord(target, revision) {
  const row = await outbox.enqueue(
    { owner: session.user, kind: "delete", target, revision },
    { writes: [{ store: RECORDS, delete: target }] },
  );
  afterEdit();
  return row;
}

function afterEdit() {
  refresh();
  if (offline || !navigator.onLine) requestSync();
  // autoFlush: a flush follows the enqueue by itself.
}

// ---- views -----------------------------------------------------------------------------

function valueOf(body) {
  if (!body) return "";
  if (body.logSet) return `+1 set @ ${body.logSet.weight}`;
  return body.weight ?? body.title ?? JSON.stringify(body);
}

/** Who holds a claim: this tab, another tab, or a service worker (its tab ids start `sw-`). */
function holder(tabId) {
  if (tabId === outbox.tabId) return `this tab ${tabId.slice(0, 8)}`;
  return tabId.startsWith("sw-") ? `service worker ${tabId.slice(3, 11)}` : `tab ${tabId.slice(0, 8)}`;
}

async function refresh() {
  const rows = await outbox.rows(session.user);
  const live = rows.filter((r) => !r.undecodable);
  const byTarget = new Map();
  for (const r of live) {
    if (!byTarget.has(r.target)) byTarget.set(r.target, []);
    byTarget.get(r.target).push(r);
  }
  // Records: the local ones, straight from IndexedDB (offline too), then operations queued
  // for a record this tab has no local copy of. A record is pending while an operation for
  // it is queued, in error when its last answer refused it, else synced.
  const local = await outbox.records(RECORDS, { index: "byOwner", range: session.user });
  const tbody = $("#records tbody");
  tbody.replaceChildren();
  const addRecordRow = (target, entity, value, revision, sets, error, pending) => {
    const tr = document.createElement("tr");
    const state = pending.length ? "pending" : error ? `error: ${error}` : "synced";
    tr.dataset.state = pending.length ? "pending" : error ? "error" : "synced";
    tr.innerHTML = `<td><code>${target}</code></td><td></td><td>${revision ?? ""}</td><td class="overlay"></td><td></td><td class="sync"></td>`;
    const input = document.createElement("input");
    input.value = value;
    input.size = 8;
    tr.children[1].append(input);
    tr.children[3].textContent = pending.map((p) => `${p.kind}${p.kind !== "delete" ? " " + valueOf(p.body) : ""} (${p.state})`).join(", ");
    tr.children[5].textContent = state;
    const save = document.createElement("button");
    save.textContent = "Save";
    save.onclick = () => updateRecord(target, fieldOf(entity, input.value), revision);
    const del = document.createElement("button");
    del.textContent = "Delete";
    del.onclick = () => deleteRecord(target, revision);
    tr.children[4].append(save, del);
    if (entity === "workout") {
      const log = document.createElement("button");
      log.textContent = "Log a set";
      log.title = "a command: never merged with another click (merge: false)";
      log.onclick = () => logSet(target, Number(input.value));
      tr.children[4].append(log);
      tr.children[1].append(` · ${sets ?? 0} sets`);
    }
    tbody.append(tr);
  };
  const shown = new Set();
  for (const rec of local) {
    shown.add(rec.key);
    addRecordRow(rec.key, rec.entity, valueOf(rec), rec.revision, rec.sets, rec.error, byTarget.get(rec.key) ?? []);
  }
  for (const [target, pending] of byTarget) {
    const create = pending.find((p) => p.kind === "create");
    if (!shown.has(target) && create) {
      addRecordRow(target, create.body?.entity ?? "?", valueOf(create.body), null, 0, null, pending);
    }
  }
  // Inspector.
  const ins = $("#inspector tbody");
  ins.replaceChildren();
  for (const r of rows) {
    const tr = document.createElement("tr");
    if (r.undecodable) {
      tr.innerHTML = `<td><code>${r.id}</code></td><td colspan="7" class="state-blocked">undecodable: ${r.error}</td><td></td>`;
    } else {
      const claim = r.claim ? `${holder(r.claim.tabId)} · ${r.claim.fence}` : "";
      tr.innerHTML = `<td><code>${r.id.slice(0, 8)}</code></td><td>${r.kind}</td><td><code>${r.target.slice(0, 20)}</code></td>` +
        `<td class="state-${r.state}">${r.state}</td><td>${claim}</td><td><code>${(r.successorOf ?? "").slice(0, 8)}</code></td>` +
        `<td>${r.evidence?.attemptCount ?? 0}</td><td>${r.blockedCode ?? r.evidence?.lastErrorCode ?? ""}</td><td></td>`;
      if (r.claim?.tabId === outbox.tabId) tr.classList.add("mine");
    }
    tr.dataset.id = r.id ?? "";
    tr.dataset.state = r.state ?? "undecodable";
    if (r.state === "blocked" || r.undecodable) {
      if (!r.undecodable) {
        const retry = document.createElement("button");
        retry.textContent = "Retry";
        retry.onclick = async () => { await outbox.retryBlocked(session.user, r.id); afterEdit(); };
        tr.lastChild.append(retry);
      }
      const discard = document.createElement("button");
      discard.textContent = "Discard";
      discard.onclick = async () => { await outbox.discard(r.owner ?? null, r.id); refresh(); };
      tr.lastChild.append(discard);
    }
    ins.append(tr);
  }
  const m = await outbox.metrics(session.user);
  $("#metrics").textContent = `total ${m.total} · queued ${m.byState.queued} · sending ${m.byState.sending} · ` +
    `held ${m.byState.held} · blocked ${m.byState.blocked} · undecodable ${m.undecodable} · ` +
    `this tab: ok ${m.attempts.success} (replays ${m.replays}), transient ${m.attempts.transient}, ` +
    `auth ${m.attempts.auth}, permanent ${m.attempts.permanent}, conflicts ${m.conflicts}`;
  $("#status").textContent = offline ? "offline" : `online as ${session.user}`;
}

// ---- controls --------------------------------------------------------------------------

$("#tab").textContent = `tab ${outbox.tabId.slice(0, 8)}`;
for (const u of users) $("#user").append(new Option(u, u));
$("#user").onchange = async (e) => {
  session.user = e.target.value; // never send one account's rows with another's session
  newSession();
  await sessionSaved;
  await outbox.resumeHeld(session.user); // rows held while this account was logged out
  refresh();
};
$("#offline").onchange = (e) => setOffline(e.target.checked);
$("#flush").onclick = () => flushNow();
$("#expire").onclick = () => expireSession();
$("#login").onclick = () => login();
$("#create").onsubmit = (e) => {
  e.preventDefault();
  const f = new FormData(e.target);
  createRecord(f.get("entity"), f.get("value"));
  e.target.reset();
};

function setOffline(value) {
  offline = value;
  shareWithWorker();
  $("#offline").checked = value;
  refresh();
  if (!value && autoflush) flushNow();
}

async function expireSession() {
  await fetch("/api/sessions/revoke", { method: "POST", headers: auth() });
  log("session expired on the server");
}

async function login() {
  newSession();
  const n = await outbox.resumeHeld(session.user);
  log(`logged in again; ${n} held row(s) resumed`);
  if (autoflush) flushNow();
  else refresh();
}

outbox.subscribe(() => refresh());
await refresh();
// autoFlush (outbox-config.js) flushes on the interval, when the browser is back online and
// when the page becomes visible; without Background Sync (Firefox, Safari) that is all
// there is while every tab is closed.

// ---- the service worker: sends while no tab is open (sw.js) ----------------------------

if (useSw && "serviceWorker" in navigator) {
  await sessionSaved;
  const url = `/sw.js?${new URLSearchParams({ db: dbName, lease: String(leaseMs) })}`;
  swReady = navigator.serviceWorker
    .register(url, { type: "module" })
    .then(() => navigator.serviceWorker.ready)
    .catch((e) => log(`service worker not registered: ${e.message}`));
}

/** Asks the browser to fire `sync` (tag SYNC_TAG) in the service worker once it is online. */
async function requestSync() {
  await sessionSaved; // the worker reads the Offline switch as it was set
  const reg = await swReady;
  if (!reg?.sync) return null; // no service worker, or no Background Sync (Firefox, Safari)
  await reg.sync.register(SYNC_TAG).catch((e) => log(`sync not registered: ${e.message}`));
  return SYNC_TAG;
}

/** Asks the service worker to flush now; resolves with its answer. */
async function flushInServiceWorker() {
  const reg = await swReady;
  if (!reg?.active) return null;
  const channel = new MessageChannel();
  const answer = new Promise((ok) => { channel.port1.onmessage = (e) => ok(e.data); });
  reg.active.postMessage({ type: "flush" }, [channel.port2]);
  return answer;
}

// Test and console hook: the same package API the page uses.
window.outboxDemo = {
  outbox, flushNow, send, reconcile, createRecord, updateRecord, deleteRecord, logSet, setOffline, login,
  expireSession, refresh, owner: () => session.user, requestSync, flushInServiceWorker,
  serviceWorker: () => swReady, ready: true,
};
