// The benchmark's in-page helpers (bench/*.ts drive them through `window.bench`). Each one
// times itself with performance.now() and returns milliseconds, so the driver's round trips
// are not counted. Rows are ~300 bytes, as in issue 12.
import { Outbox, classifyHttp } from "/pkg/outbox_idb.js";

const NOTE = "x".repeat(200);
/** Every send of this page, by operation id (duplicates across pages are counted from these). */
const sent = [];

function openRaw(db) {
  return new Promise((ok, err) => {
    const r = indexedDB.open(db);
    r.onsuccess = () => ok(r.result);
    r.onerror = () => err(r.error);
  });
}

function txDone(tx) {
  return new Promise((ok, err) => {
    tx.oncomplete = () => ok();
    tx.onerror = () => err(tx.error);
    tx.onabort = () => err(tx.error);
  });
}

/** A row as the package stores it would be, for the floors (same store, same indexes). */
function rawRow(owner, i, state) {
  return { id: `floor-${owner}-${i}`, owner, target: `workout:${i}`, kind: "update",
           body: { weight: i % 1000, note: NOTE }, fingerprint: "f".repeat(64), savedAt: i, state };
}

/**
 * One readwrite transaction: the index read of the row's [owner, target], then a put.
 * `commit`: end it with an explicit `commit()` instead of letting it commit on its own.
 */
function readPut(idb, owner, i, state, durability, commit = false) {
  const tx = idb.transaction("outbox", "readwrite", { durability });
  const s = tx.objectStore("outbox");
  const g = s.index("byOwnerTarget").getAll([owner, `workout:${i}`]);
  g.onsuccess = () => {
    s.put(rawRow(owner, i, state));
    if (commit) tx.commit();
  };
  return txDone(tx);
}

/** Fresh rows of `owner` written in transactions of 5,000 (setup, not timed). */
async function bulk(idb, n, make) {
  for (let start = 0; start < n; start += 5_000) {
    const tx = idb.transaction("outbox", "readwrite");
    const s = tx.objectStore("outbox");
    for (let i = start; i < Math.min(n, start + 5_000); i++) s.put(make(i));
    await txDone(tx);
  }
}

function authHeaders(owner, id) {
  return { Authorization: `Bearer ${owner}.bench`, "Idempotency-Key": id, "Content-Type": "application/json" };
}

async function post(owner, id, body) {
  const res = await fetch("/api/records/workout", { method: "POST", headers: authHeaders(owner, id), body: JSON.stringify(body) });
  const answer = await res.json().catch(() => null);
  return classifyHttp(res.status, res.headers, answer, Date.now());
}

window.bench = {
  db: null,
  outbox: null,

  /** `concurrency` (optional, from the page's query): the flush option, else the default. */
  async open(db, tab, concurrency) {
    this.db = db;
    this.outbox = await Outbox.open({ dbName: db, tabId: tab, ...(concurrency ? { concurrency: Number(concurrency) } : {}) });
  },

  /** Floor A: one readwrite tx per row (index read + put). `durability`: "default" or "strict". */
  async floorA(owner, n, durability = "default") {
    const idb = await openRaw(this.db);
    const t0 = performance.now();
    for (let i = 0; i < n; i++) await readPut(idb, owner, i, "queued", durability);
    const ms = performance.now() - t0;
    idb.close();
    return ms;
  },

  /** Floor B: two such tx per row over queued rows — a naive claim, then a naive ACK. */
  async floorB(owner, n) {
    const idb = await openRaw(this.db);
    await bulk(idb, n, (i) => rawRow(owner, i, "queued"));
    const t0 = performance.now();
    for (let i = 0; i < n; i++) {
      await readPut(idb, owner, i, "sending", "default");
      await readPut(idb, owner, i, "acked", "default");
    }
    const ms = performance.now() - t0;
    idb.close();
    return ms;
  },

  /** `n` enqueues, one after another (the package's strict transaction each). */
  async enqueue(owner, n) {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) {
      await this.outbox.enqueue({ owner, kind: "update", target: `workout:${i}`, body: { weight: i % 1000, note: NOTE } });
    }
    return performance.now() - t0;
  },

  /**
   * `n` enqueues of `owner` taking turns, row by row, with two raw strict transactions (floor
   * A with `durability: "strict"`, left to commit on its own, and the same ending with
   * `commit()`) in the same database, so that all three meet the disk in the same state.
   * The first `warm` turns are not timed (the page was just loaded: its code is not
   * optimized yet). Returns the total ms of each over the `n` timed turns.
   */
  async enqueuePaired(owner, n, warm = 50) {
    const idb = await openRaw(this.db);
    const ms = { raw: 0, rawCommit: 0, enqueue: 0 };
    for (let i = -warm; i < n; i++) {
      if (i === 0) Object.keys(ms).forEach((k) => (ms[k] = 0));
      const t0 = performance.now();
      await readPut(idb, "floor", i, "queued", "strict");
      const t1 = performance.now();
      await readPut(idb, "floor-commit", i, "queued", "strict", true);
      const t2 = performance.now();
      await this.outbox.enqueue({ owner, kind: "update", target: `workout:${i}`, body: { weight: i % 1000, note: NOTE } });
      ms.enqueue += performance.now() - t2;
      ms.rawCommit += t2 - t1;
      ms.raw += t1 - t0;
    }
    idb.close();
    return ms;
  },

  /**
   * `n` queued rows of `owner` without paying `n` strict transactions: one row is enqueued
   * through the package and copied (new id, target, savedAt) in bulk transactions. `kind`
   * "create" rows have `pending:` targets and a body the gate accepts.
   */
  async seed(owner, n, kind = "update") {
    const body = kind === "create" ? { entity: "workout", weight: 0, note: NOTE } : { weight: 0, note: NOTE };
    const tpl = await this.outbox.enqueue({ owner, kind, ...(kind === "update" ? { target: "workout:tpl" } : {}), body });
    const idb = await openRaw(this.db);
    const tx = idb.transaction("outbox", "readwrite");
    const store = tx.objectStore("outbox");
    const raw = await new Promise((ok) => (store.get(tpl.id).onsuccess = (e) => ok(e.target.result)));
    store.delete(tpl.id);
    await txDone(tx);
    const run = Math.random().toString(36).slice(2, 8);
    await bulk(idb, n, (i) => {
      const id = `${owner}-${run}-${i}`;
      const target = kind === "create" ? `pending:${id}` : `workout:${i}`;
      return { ...raw, id, target, savedAt: raw.savedAt + i, body: { ...body, weight: i % 1000 } };
    });
    idb.close();
  },

  /**
   * One flush of `owner`. `send`: "instant" answers success at once; "fetch" POSTs to
   * /api/records/workout and classifies the answer; "delayed" answers success after 20–40 ms
   * (answers that trickle in, with no network's CPU). Returns absolute start/end (ms since the
   * epoch, to combine pages) and the report's counts.
   */
  async flush(owner, send) {
    const ports = {
      instant: (op) => { sent.push(op.id); return { type: "success", receipt: { serverId: "workout:1", revision: 1 } }; },
      fetch: (op) => { sent.push(op.id); return post(owner, op.id, op.body); },
      delayed: (op) => { sent.push(op.id); return new Promise((ok) => setTimeout(() => ok({ type: "success", receipt: { serverId: "workout:1", revision: 1 } }), 20 + 20 * Math.random())); },
    };
    const start = performance.timeOrigin + performance.now();
    const r = await this.outbox.flush({ owner, send: ports[send] });
    const end = performance.timeOrigin + performance.now();
    return { start, end, succeeded: r.succeeded, stale: r.stale, deferred: r.deferred, blocked: r.blocked };
  },

  /** The network alone: `n` POSTs with `inFlight` at a time, no IndexedDB. */
  async posts(owner, n, inFlight) {
    let next = 0;
    let ok = 0;
    const worker = async () => {
      while (next < n) {
        const i = next++;
        const o = await post(owner, `${owner}-post-${i}`, { entity: "workout", weight: i % 1000, note: NOTE });
        if (o.type === "success") ok++;
      }
    };
    const t0 = performance.now();
    await Promise.all(Array.from({ length: inFlight }, worker));
    return { ms: performance.now() - t0, ok };
  },

  /** The ids this page sent, and forgets them. */
  takeSent() {
    return sent.splice(0);
  },

  async left(owner) {
    return (await this.outbox.rows(owner)).length;
  },

  /** Rows of other owners (997 of them), straight into the package's store. */
  async seedOthers(n) {
    const idb = await openRaw(this.db);
    await bulk(idb, n, (i) => ({ id: `other-${i}`, owner: `user-${i % 997}`, target: `workout:${i}`, kind: "update",
                                 body: { weight: i % 1000, note: NOTE }, savedAt: i, state: "queued" }));
    idb.close();
  },

  /** One purgeOwner(owner), timed, and how many rows it removed. */
  async purge(owner) {
    const t0 = performance.now();
    const n = await this.outbox.purgeOwner(owner);
    return { ms: performance.now() - t0, n };
  },

  /** One call of rows(owner), metrics(owner) or undecodable(), timed. */
  async read(what, owner) {
    const o = this.outbox;
    const t0 = performance.now();
    if (what === "rows") await o.rows(owner);
    else if (what === "metrics") await o.metrics(owner);
    else await o.undecodable();
    return performance.now() - t0;
  },
};

