// Mixed-version writers (§3 compatibility rules, §5 older-writer rule, §13 row 9): a page
// writing and sending rows the way the older format does (no claim, no writer, no evidence,
// no fingerprint; plus fields this version does not know, a Date and a nested object among
// them) beside a page running the package on the same database.
import { test, expect, type Page } from "@playwright/test";
import { T0, LEASE, uid, openTab, rows, enqueue, flush, startFlush, flushResult, setClock, effects, timesApplied, holdRecords, waitHeld } from "./helpers";

let user: string;
let db: string;
test.beforeEach(() => {
  user = `u${uid()}`;
  db = `db-${uid()}`;
});

/** A page of the origin that does not run the package: the older app version. */
async function olderWriter(context: import("@playwright/test").BrowserContext): Promise<Page> {
  const page = await context.newPage();
  await page.goto("/style.css");
  return page;
}

const META = { nested: { level: 2, tags: ["a", "b"], deeper: { ok: true } } };

/** Stores rows as the older writer does, with its unknown fields (a Date, a nested object). */
async function oldPut(page: Page, values: object[]) {
  await page.evaluate(async ({ db, values, T0, META }) => {
    const conn: IDBDatabase = await new Promise((ok, err) => { const r = indexedDB.open(db); r.onsuccess = () => ok(r.result); r.onerror = () => err(r.error); });
    await new Promise<void>((ok, err) => {
      const tx = conn.transaction("outbox", "readwrite");
      for (const v of values) tx.objectStore("outbox").put({ ...v, legacyStamp: new Date(T0 - 5_000), legacyMeta: META });
      tx.oncomplete = () => ok();
      tx.onerror = () => err(tx.error);
    });
    conn.close();
  }, { db, values, T0, META });
}

/** The unknown fields of row `id` as stored: a real Date still, the nested object intact. */
async function unknownFields(page: Page, id: string) {
  return page.evaluate(async ({ db, id }) => {
    const conn: IDBDatabase = await new Promise((ok, err) => { const r = indexedDB.open(db); r.onsuccess = () => ok(r.result); r.onerror = () => err(r.error); });
    const v: any = await new Promise((ok) => { const g = conn.transaction("outbox").objectStore("outbox").get(id); g.onsuccess = () => ok(g.result); });
    conn.close();
    if (!v) return null;
    return { isDate: v.legacyStamp instanceof Date, at: v.legacyStamp?.getTime?.(), meta: v.legacyMeta, claim: v.claim ?? null, state: v.state };
  }, { db, id });
}

test("an older writer's rows beside the package: its sending row is honoured for one lease, then taken over with the same id; unknown fields intact at every step", async ({ context, request }) => {
  const old = await olderWriter(context);
  const a = await openTab(context, { db, tab: "tab-a", users: [user], clock: T0 });
  const x = `old-x-${uid()}`;
  const y = `old-y-${uid()}`;
  const base = { owner: user, kind: "create", savedAt: T0 - 5_000 };
  const intact = { isDate: true, at: T0 - 5_000, meta: META };

  // The older writer queues X and Y, then sends X: state sending, sentAt now, and the server
  // commits; its answer is lost with the older page.
  await oldPut(old, [
    { ...base, id: x, target: `pending:${x}`, body: { entity: "workout", weight: 40 }, state: "queued" },
    { ...base, id: y, target: `pending:${y}`, body: { entity: "plan", title: "older" }, state: "queued", savedAt: T0 - 4_000 },
  ]);
  await oldPut(old, [{ ...base, id: x, target: `pending:${x}`, body: { entity: "workout", weight: 40 }, state: "sending", sentAt: T0 }]);
  const sent = await old.evaluate(async ({ x, user }) => (await fetch("/api/records/workout", {
    method: "POST", headers: { Authorization: `Bearer ${user}.old`, "Idempotency-Key": x, "Content-Type": "application/json" },
    body: JSON.stringify({ entity: "workout", weight: 40 }),
  })).status, { x, user });
  expect(sent).toBe(201);
  await old.close();
  expect(await unknownFields(a, x)).toMatchObject({ ...intact, claim: null, state: "sending" });

  // Within the lease X counts as in flight: the package sends Y (claim, 503, deferred) and
  // leaves X alone. Y's unknown fields survive the claim and the answer.
  await setClock(a, T0 + 1_000);
  const heldY = await holdRecords(a);
  await startFlush(a);
  const ry = await waitHeld(heldY);
  expect(ry.request().headers()["idempotency-key"]).toBe(y);
  expect(await unknownFields(a, y)).toMatchObject({ ...intact, state: "sending", claim: { tabId: "tab-a", fence: 1 } });
  await ry.fulfill({ status: 503, contentType: "application/json", body: "{}" });
  const rep1 = await flushResult(a);
  expect([rep1.claimed, rep1.deferred]).toEqual([1, 1]);
  expect(await unknownFields(a, y)).toMatchObject({ ...intact, state: "queued" });
  expect(await unknownFields(a, x)).toMatchObject({ ...intact, claim: null, state: "sending" });
  expect(await timesApplied(request, y)).toBe(0);

  // An edit of X meanwhile waits as an intent; X itself is not rewritten.
  const u = await enqueue(a, { kind: "update", target: `pending:${x}`, body: { weight: 41 } });
  expect(u).toMatchObject({ target: `pending:${x}`, successorOf: x });
  expect(await unknownFields(a, x)).toMatchObject({ ...intact, claim: null, state: "sending" });

  // After the older writer's lease (the reading tab's lease, from sentAt), the package takes
  // X over with the same id: the gate replays the stored answer, one effect.
  await setClock(a, T0 + LEASE - 1);
  const early = await flush(a);
  expect(early.receipts.map((r: any) => r.id)).not.toContain(x);
  await setClock(a, T0 + LEASE + 60_000);
  const heldX = await holdRecords(a);
  await startFlush(a);
  const rx = await waitHeld(heldX);
  const key = rx.request().headers()["idempotency-key"];
  expect([x, y]).toContain(key);
  const claimed = await unknownFields(a, key);
  expect(claimed).toMatchObject({ ...intact, state: "sending", claim: { tabId: "tab-a" } });
  await rx.continue();
  const rep2 = await flushResult(a);
  expect(rep2.receipts.find((r: any) => r.id === x)).toMatchObject({ replayed: true, applied: true });
  expect(rep2.converted).toBe(1);
  expect(await timesApplied(request, x)).toBe(1);
  expect(await timesApplied(request, y)).toBe(1);
  expect(await timesApplied(request, u.id)).toBe(1);
  const eff = await effects(request, user);
  expect(eff.filter((e) => e.kind === "create")).toHaveLength(2);
  expect(await rows(a)).toEqual([]);
});
