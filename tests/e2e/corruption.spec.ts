// Hostile pages and storage: rows corrupted directly in IndexedDB among good ones, and the
// database deleted or upgraded by another page, or a read failing, while a flush runs.
import { test, expect, type APIRequestContext, type Page } from "@playwright/test";
import { T0, uid, openTab, rows, enqueue, flush, startFlush, flushResult, setClock, effects, timesApplied, holdRecords, waitHeld } from "./helpers";

let user: string;
let db: string;
test.beforeEach(() => {
  user = `u${uid()}`;
  db = `db-${uid()}`;
});

/** Runs `fn(db)` on a raw connection of this page (as another page of the origin would). */
function raw<T>(page: Page, fn: string, arg: unknown = null): Promise<T> {
  return page.evaluate(async ({ db, fn, arg }) => {
    const conn: IDBDatabase = await new Promise((ok, err) => {
      const r = indexedDB.open(db);
      r.onsuccess = () => ok(r.result);
      r.onerror = () => err(r.error);
    });
    try {
      // eslint-disable-next-line no-new-func
      return await new Function("db", "arg", `return (${fn})(db, arg)`)(conn, arg);
    } finally {
      conn.close();
    }
  }, { db, fn, arg });
}

const putAll = `(db, values) => new Promise((ok, err) => {
  const tx = db.transaction("outbox", "readwrite");
  for (const v of values) tx.objectStore("outbox").put(v.huge ? { ...v, body: new Uint8Array(v.huge) } : v);
  tx.oncomplete = () => ok(null);
  tx.onerror = () => err(tx.error);
})`;
const getAll = `(db) => new Promise((ok, err) => {
  const r = db.transaction("outbox").objectStore("outbox").getAll();
  r.onsuccess = () => ok(r.result.map((v) => v.body instanceof Uint8Array ? { ...v, body: { bytes: v.body.length } } : v));
  r.onerror = () => err(r.error);
})`;

test("corrupted rows among good ones: never sent, never deleted, counted as undecodable; the good rows go", async ({ context, request }) => {
  const a = await openTab(context, { db, tab: "tab-a", users: [user] });
  const good1 = await enqueue(a, { kind: "create", body: { entity: "workout", weight: 1 } });
  const good2 = await enqueue(a, { kind: "create", body: { entity: "plan", title: "ok" } });
  const base = { owner: user, target: "workout:1", kind: "update", body: { weight: 2 }, savedAt: T0 - 1, state: "queued" };
  const corrupted = [
    { ...base, id: "bad-types", kind: 42, savedAt: "yesterday" },
    { ...base, id: 7 }, // the key is there but is not a string id
    { ...base, id: "no-owner", owner: undefined },
    { ...base, id: "truncated-claim", state: "sending", claim: { tabId: "tab-z" } },
    { ...base, id: "unknown-state", state: "flying" },
    { ...base, id: "huge-binary-body", huge: 4 * 1024 * 1024 },
  ];
  await raw(a, putAll, corrupted);
  // A row without its key cannot even be stored: IndexedDB refuses it (DataError).
  const missingId = await raw<string>(a, `(db, v) => new Promise((ok) => {
    try { db.transaction("outbox", "readwrite").objectStore("outbox").put(v); ok("stored"); } catch (e) { ok(e.name); }
  })`, { ...base });
  expect(missingId).toBe("DataError");
  const before = await raw<any[]>(a, getAll);

  const undecodable: any[] = await a.evaluate(() => window.outboxDemo.outbox.undecodable());
  // A key that is not a string is reported with id null and the stored value in `raw`.
  expect(undecodable.map((u) => String(u.id ?? u.raw?.id)).sort()).toEqual(
    ["7", "bad-types", "huge-binary-body", "no-owner", "truncated-claim", "unknown-state"].sort());
  for (const u of undecodable) expect(typeof u.error).toBe("string");
  const metrics = await a.evaluate(() => window.outboxDemo.outbox.metrics());
  expect(metrics.undecodable).toBe(6);
  expect(metrics.total).toBe(2);

  let sent = 0;
  await a.route("**/api/records/**", (r) => { sent++; return r.continue(); });
  const rep = await flush(a);
  expect(rep.succeeded).toBe(2);
  expect(sent).toBe(2);
  expect(await timesApplied(request, good1.id)).toBe(1);
  expect(await timesApplied(request, good2.id)).toBe(1);
  // Everything corrupted is still there exactly as stored; purge and later flushes keep it.
  await a.evaluate((o) => window.outboxDemo.outbox.purgeOwner(o), user);
  await setClock(a, T0 + 3_600_000);
  await flush(a);
  const after = await raw<any[]>(a, getAll);
  expect(after).toEqual(before.filter((v) => v.id !== good1.id && v.id !== good2.id));
  expect((await effects(request, user)).length).toBe(2);
  // Only an explicit discard removes one.
  expect(await a.evaluate(() => window.outboxDemo.outbox.discard(null, "no-owner"))).toBe(true);
  expect((await raw<any[]>(a, getAll)).length).toBe(5);
});

test("the database deleted by another page while a flush runs: a coded error or a clean reopen, the page keeps working", async ({ context, request }) => {
  const a = await openTab(context, { db, tab: "tab-a", users: [user] });
  const b = await openTab(context, { db: `${db}-other`, tab: "tab-b", users: [user] });
  const c = await enqueue(a, { kind: "create", body: { entity: "workout", weight: 3 } });
  const queued = await enqueue(a, { kind: "create", body: { entity: "workout", weight: 4 } });
  const held = await holdRecords(a, 1);
  await a.evaluate(() => { window.__flush = window.outboxDemo.flushNow({ concurrency: 1 }).catch((e: any) => ({ error: e.code ?? "NONE", message: e.message })); });
  const r = await waitHeld(held);
  const deleted = await b.evaluate((name) => new Promise((ok) => {
    const req = indexedDB.deleteDatabase(name);
    req.onsuccess = () => ok("deleted");
    req.onerror = () => ok(`error ${req.error?.name}`);
    req.onblocked = () => ok("blocked");
  }), db);
  expect(deleted).toBe("deleted");
  await r.continue();
  const rep = await flushResult(a);
  if (rep && "error" in rep) expect(["STORAGE", "CLOSED", "BLOCKED"]).toContain(rep.error);
  // The create on the wire was applied once; what the deletion took is gone with the site's
  // data (as when a user clears it), and the page keeps working on a clean reopen.
  const onWire = r.request().headers()["idempotency-key"];
  expect([c.id, queued.id]).toContain(onWire);
  expect(await timesApplied(request, onWire)).toBe(1);
  for (const op of [c, queued]) expect(await timesApplied(request, op.id)).toBeLessThanOrEqual(1);
  const again = await enqueue(a, { kind: "create", body: { entity: "plan", title: "after" } });
  expect((await rows(a)).map((x) => x.id)).toContain(again.id);
  await flush(a);
  expect(await timesApplied(request, again.id)).toBe(1);
});

test("the database upgraded by another page while a flush runs: no row lost, each applied once", async ({ context, request }) => {
  const a = await openTab(context, { db, tab: "tab-a", users: [user] });
  const b = await openTab(context, { db: `${db}-other`, tab: "tab-b", users: [user] });
  const ops = [];
  for (const w of [5, 6, 7]) ops.push(await enqueue(a, { kind: "create", body: { entity: "workout", weight: w } }));
  const held = await holdRecords(a, 1);
  await a.evaluate(() => { window.__flush = window.outboxDemo.flushNow({ concurrency: 1 }).catch((e: any) => ({ error: e.code ?? "NONE", message: e.message })); });
  const r = await waitHeld(held);
  // Another page (a newer app version) upgrades the database and adds a store of its own.
  const upgraded = await b.evaluate((name) => new Promise((ok) => {
    const probe = indexedDB.open(name);
    probe.onsuccess = () => {
      const v = probe.result.version;
      probe.result.close();
      const req = indexedDB.open(name, v + 1);
      req.onupgradeneeded = () => req.result.createObjectStore(`newer-${v}`);
      req.onsuccess = () => { req.result.close(); ok(v + 1); };
      req.onerror = () => ok(`error ${req.error?.name}`);
      req.onblocked = () => ok("blocked");
    };
  }), db);
  expect(typeof upgraded).toBe("number");
  await r.continue();
  const rep = await flushResult(a);
  if (rep && "error" in rep) expect(["STORAGE", "CLOSED", "BLOCKED"]).toContain(rep.error);
  // Whatever the flush reported, every row is either still stored or applied, never both
  // missing; then flushing again sends what is left, each operation once.
  const stored = await b.evaluate(async (name) => {
    const conn: IDBDatabase = await new Promise((ok, err) => { const r = indexedDB.open(name); r.onsuccess = () => ok(r.result); r.onerror = () => err(r.error); });
    const ids: string[] = await new Promise((ok) => { const g = conn.transaction("outbox").objectStore("outbox").getAllKeys(); g.onsuccess = () => ok(g.result as string[]); });
    conn.close();
    return ids;
  }, db);
  for (const op of ops) {
    const applied = await timesApplied(request, op.id);
    expect(applied + (stored.includes(op.id) ? 1 : 0), `operation ${op.id}`).toBeGreaterThanOrEqual(1);
  }
  await setClock(a, T0 + 3_600_000);
  for (let i = 0; i < 3 && (await rows(a)).length > 0; i++) await flush(a).catch(() => null);
  expect(await rows(a)).toEqual([]);
  for (const op of ops) expect(await timesApplied(request, op.id)).toBe(1);
});

/** After a flush that failed inside its write transaction: nothing of it was written or sent
 * (the rows are exactly `before`); once `__restoreReads()` undoes the fault, the next flush
 * sends each of `ops` once and leaves `left` (the ids of rows it never sends). */
async function untouchedThenSentOnce(a: Page, request: APIRequestContext, before: any[], ops: { id: string }[], left: string[] = []) {
  expect(await rows(a)).toEqual(before);
  for (const op of ops) expect(await timesApplied(request, op.id)).toBe(0);
  await a.evaluate(() => (window as any).__restoreReads());
  const rep = await flush(a);
  expect(rep.succeeded).toBe(ops.length);
  for (const op of ops) expect(await timesApplied(request, op.id)).toBe(1);
  expect((await raw<any[]>(a, getAll)).map((r) => r.id)).toEqual(left);
}

// A read that fails inside a write transaction of a flush (issue 35: the transaction's reads
// wait on the last request's promise alone and take the others' results from their
// requests). IndexedDB settles a transaction's requests in order and a failed request
// aborts its transaction, so the reads after it fail too: the flush must report the read
// that failed (not the abort that followed it), write nothing, and leave every row to the
// next flush, which sends each once.
test("the first of two reads of a flush's claim fails: that read's error, nothing written, each row sent once by the next flush", async ({ context, request }) => {
  const a = await openTab(context, { db, tab: "tab-a", users: [user] });
  // The claim re-reads its rows as stretches of the [owner, savedAt] index, one read each.
  // Six undecodable rows saved between the first row and the others split them into two
  // stretches: two reads in the claim's transaction.
  await setClock(a, T0);
  const ops = [await enqueue(a, { kind: "create", body: { entity: "workout", weight: 1 } })];
  const gap = [1, 2, 3, 4, 5, 6].map((i) => ({ id: `gap-${i}`, owner: user, savedAt: T0 + 1 }));
  await raw(a, putAll, gap);
  await setClock(a, T0 + 2);
  for (const w of [2, 3]) ops.push(await enqueue(a, { kind: "create", body: { entity: "workout", weight: w } }));
  const before = await rows(a);
  expect(before.filter((r) => ops.some((o) => o.id === r.id)).map((r) => r.state)).toEqual(["queued", "queued", "queued"]);
  // Its first read (IDBIndex.getAll) is replaced by a request that fails later, in its
  // turn: an `add` under the first row's key, which exists (ConstraintError). The read
  // after it is then aborted (AbortError): the one the flush waits on.
  await a.evaluate((existing) => {
    const getAll = IDBIndex.prototype.getAll;
    let seen = 0;
    (window as any).__failedReads = 0;
    IDBIndex.prototype.getAll = function (this: IDBIndex, ...args: any[]) {
      const tx = this.objectStore.transaction;
      if (tx === (window as any).__failedTx) (window as any).__readsInFailedTx += 1;
      if (tx.mode === "readwrite" && (window as any).__failedReads === 0 && ++seen === 1) {
        (window as any).__failedReads = 1;
        (window as any).__failedTx = tx;
        (window as any).__readsInFailedTx = 1;
        return this.objectStore.add({ id: existing }) as unknown as IDBRequest<any[]>;
      }
      return (getAll as any).apply(this, args);
    } as any;
    (window as any).__restoreReads = () => { IDBIndex.prototype.getAll = getAll; };
  }, ops[0].id);
  const failed = await a.evaluate(() =>
    window.outboxDemo.flushNow().then(
      (report: any) => ({ report }),
      (e: any) => ({ code: e.code, message: String(e.message), report: e.report }),
    ),
  );
  expect(await a.evaluate(() => (window as any).__failedReads)).toBe(1);
  // The failed read was not the transaction's last: the one after it was aborted.
  expect(await a.evaluate(() => (window as any).__readsInFailedTx)).toBeGreaterThanOrEqual(2);
  expect(failed).toMatchObject({ code: "STORAGE" });
  // The read that failed, not the abort it caused in the reads after it.
  expect((failed as any).message).toMatch(/^read: /);
  // (Chromium's words for the ConstraintError; an AbortError says the transaction was aborted.)
  expect((failed as any).message).toContain("Key already exists");
  expect((failed as any).message).not.toMatch(/abort/i);
  // Nothing written (none claimed, none sent); the next flush sends each row once.
  await untouchedThenSentOnce(a, request, before, ops, gap.map((r) => r.id));
});

// A write transaction of a flush aborted from outside after its reads (another script on the
// page, a browser that gives up on it): the puts the plan then issues are refused, the flush
// rejects with STORAGE, nothing of it is written, and the next flush sends each row once.
test("a flush's write transaction aborted after its reads: a coded error, nothing written, each row sent once by the next flush", async ({ context, request }) => {
  const a = await openTab(context, { db, tab: "tab-a", users: [user] });
  const ops = [];
  for (const w of [1, 2, 3]) ops.push(await enqueue(a, { kind: "create", body: { entity: "workout", weight: w } }));
  const before = await rows(a);
  await a.evaluate(() => {
    const getAll = IDBIndex.prototype.getAll;
    (window as any).__aborted = 0;
    IDBIndex.prototype.getAll = function (this: IDBIndex, ...args: any[]) {
      const req = (getAll as any).apply(this, args) as IDBRequest;
      const tx = this.objectStore.transaction;
      if (tx.mode === "readwrite" && (window as any).__aborted === 0) {
        (window as any).__aborted = 1;
        // Before the library's own listener (added after this returns): the transaction is
        // aborted when the read has succeeded, before the plan's puts are issued.
        req.addEventListener("success", () => tx.abort());
      }
      return req;
    } as any;
    (window as any).__restoreReads = () => { IDBIndex.prototype.getAll = getAll; };
  });
  const failed = await a.evaluate(() =>
    window.outboxDemo.flushNow().then(
      (report: any) => ({ report }),
      (e: any) => ({ code: e.code, message: String(e.message) }),
    ),
  );
  expect(await a.evaluate(() => (window as any).__aborted)).toBe(1);
  expect(failed).toMatchObject({ code: "STORAGE" });
  await untouchedThenSentOnce(a, request, before, ops);
});
