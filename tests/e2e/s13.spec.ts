// SPEC §13, one test per row, in Chromium: pages of one context share one IndexedDB, each
// page has its own clock. Each test asserts the queue in IndexedDB and what the gate applied.
import { test, expect } from "@playwright/test";
import {
  T0, LEASE, uid, openTab, rows, enqueue, flush, startFlush, flushResult, setClock, effects, timesApplied,
  holdRecords, waitHeld, serverRecord, putRaw,
} from "./helpers";

let user: string;
let db: string;
test.beforeEach(() => {
  user = `u${uid()}`;
  db = `db-${uid()}`;
});

test("s13 row 1: an update over an in-flight update waits as its successor", async ({ context, request }) => {
  const a = await openTab(context, { db, tab: "tab-a", users: [user] });
  const rec = await serverRecord(a);
  const held = await holdRecords(a);
  const u1 = await enqueue(a, { kind: "update", target: rec.serverId, body: { weight: 80 } });
  await startFlush(a);
  const r1 = await waitHeld(held);
  const u2 = await enqueue(a, { kind: "update", target: rec.serverId, body: { weight: 81 } });
  expect(u2.successorOf).toBe(u1.id);
  await r1.fulfill({ status: 503, contentType: "application/json", body: "{}" });
  const rep = await flushResult(a);
  expect([rep.claimed, rep.deferred]).toEqual([1, 1]);
  const after = await rows(a);
  const u1row = after.find((r) => r.id === u1.id);
  expect(u1row.state).toBe("queued");
  expect(u1row.sentAt).toBeUndefined();
  expect(u1row.nextAttemptAt).toBeGreaterThanOrEqual(T0);
  expect(after.find((r) => r.id === u2.id)).toEqual(u2);
  await setClock(a, T0 + 60_000);
  const rep2 = await flush(a);
  expect(rep2.succeeded).toBe(2);
  expect((await effects(request, user)).slice(-2).map((e) => e.opId)).toEqual([u1.id, u2.id]);
  expect(await rows(a)).toEqual([]);
});

test("s13 row 2: two tabs claim one queued create at once, exactly one wins", async ({ context, request }) => {
  // turnWait 0: the two flushes below race on the claim itself instead of taking turns.
  const a = await openTab(context, { db, tab: "tab-a", users: [user], turnWait: 0 });
  const b = await openTab(context, { db, tab: "tab-b", users: [user], turnWait: 0 });
  const c1 = await enqueue(a, { kind: "create", body: { entity: "plan", title: "x" } });
  const claim = (p: typeof a) => p.evaluate(([o, id]) => window.outboxDemo.outbox.claim(o, id), [user, c1.id]);
  const tickets = await Promise.all([claim(a), claim(b)]);
  expect(tickets.filter((t) => t !== null)).toHaveLength(1);
  expect(tickets.find((t) => t !== null).fence).toBe(1);

  // And whole flushes racing on a fresh create: one send, one effect.
  const c2 = await enqueue(a, { kind: "create", body: { entity: "plan", title: "y" } });
  let sends = 0;
  for (const p of [a, b]) await p.route("**/api/records/**", (r) => { sends++; return r.continue(); });
  const [ra, rb] = await Promise.all([flush(a), flush(b)]);
  expect(ra.claimed + rb.claimed).toBe(1);
  expect(sends).toBe(1);
  expect(await timesApplied(request, c2.id)).toBe(1);
  expect((await rows(a)).map((r) => r.id)).toEqual([c1.id]);
});

test("s13 row 2, taking turns: two pages flushing one queue at once, one sends it all and the other finds it sent", async ({ context, request }) => {
  const a = await openTab(context, { db, tab: "tab-a", users: [user] });
  const b = await openTab(context, { db, tab: "tab-b", users: [user] });
  const ids: string[] = [];
  for (let i = 0; i < 12; i++) ids.push((await enqueue(a, { kind: "create", body: { entity: "plan", title: `t${i}` } })).id);
  let sends = 0;
  for (const p of [a, b]) await p.route("**/api/records/**", (r) => { sends++; return r.continue(); });
  const [ra, rb] = await Promise.all([flush(a), flush(b)]);
  expect([ra.claimed, rb.claimed].sort((x, y) => x - y)).toEqual([0, 12]);
  expect(ra.stale + rb.stale).toBe(0);
  expect(sends).toBe(12);
  for (const id of ids) expect(await timesApplied(request, id)).toBe(1);
  expect(await rows(a)).toEqual([]);
});

test("s13 row 3: after the lease a tab takes over with fence 2; the old tab's late success changes nothing", async ({ context, request }) => {
  const a = await openTab(context, { db, tab: "tab-a", users: [user] });
  const b = await openTab(context, { db, tab: "tab-b", users: [user] });
  const c1 = await enqueue(a, { kind: "create", body: { entity: "workout", weight: 60 } });
  const heldA = await holdRecords(a);
  await startFlush(a);
  const ra = await waitHeld(heldA);
  await setClock(b, T0 + LEASE + 1);
  const heldB = await holdRecords(b);
  await startFlush(b);
  const rb = await waitHeld(heldB);
  const taken = (await rows(b))[0];
  expect(taken.claim).toMatchObject({ tabId: "tab-b", fence: 2 });

  // A's request reaches the server late; its success is not A's to apply.
  await ra.fulfill({ response: await ra.fetch() });
  const repA = await flushResult(a);
  expect(repA.receipts).toHaveLength(1);
  expect(repA.receipts[0]).toMatchObject({ id: c1.id, applied: false });
  expect((await rows(a))[0]).toEqual(taken);

  await rb.continue();
  const repB = await flushResult(b);
  expect(repB.succeeded).toBe(1);
  expect(repB.receipts[0].replayed).toBe(true);
  expect(await rows(b)).toEqual([]);
  expect(await timesApplied(request, c1.id)).toBe(1);
});

test("s13 row 3: the old tab's late failure after a takeover changes nothing", async ({ context }) => {
  const a = await openTab(context, { db, tab: "tab-a", users: [user] });
  const b = await openTab(context, { db, tab: "tab-b", users: [user], clock: T0 + LEASE + 1 });
  await enqueue(a, { kind: "create", body: { entity: "workout", weight: 61 } });
  const heldA = await holdRecords(a);
  await startFlush(a);
  const ra = await waitHeld(heldA);
  const heldB = await holdRecords(b);
  await startFlush(b);
  await waitHeld(heldB);
  const taken = (await rows(b))[0];
  expect(taken.claim.fence).toBe(2);
  await ra.fulfill({ status: 500, body: "{}" });
  const repA = await flushResult(a);
  expect([repA.deferred, repA.skipped]).toEqual([0, 1]);
  expect((await rows(a))[0]).toEqual(taken);
});

test("s13 row 4: an edit of a create in flight is an intent, converted before the create is deleted and sent in the same flush", async ({ context, request }) => {
  const a = await openTab(context, { db, tab: "tab-a", users: [user] });
  const held = await holdRecords(a);
  const c1 = await enqueue(a, { kind: "create", body: { entity: "workout", weight: 70 } });
  await startFlush(a);
  const r = await waitHeld(held);
  const u1 = await enqueue(a, { kind: "update", target: c1.target, body: { weight: 72 } });
  expect(u1).toMatchObject({ target: c1.target, successorOf: c1.id, state: "queued" });
  await r.continue();
  const rep = await flushResult(a);
  expect([rep.succeeded, rep.converted]).toEqual([2, 1]);
  const serverId = rep.receipts.find((x: any) => x.id === c1.id).receipt.serverId;
  expect(await effects(request, user)).toEqual([
    { opId: c1.id, actor: user, kind: "create", target: serverId, count: 1 },
    { opId: u1.id, actor: user, kind: "update", target: serverId, count: 1 },
  ]);
  expect(await rows(a)).toEqual([]);
});

test("s13 row 5: a delete of a deferred create is an intent; the create is resent, replayed, then the delete goes", async ({ context, request }) => {
  const a = await openTab(context, { db, tab: "tab-a", users: [user] });
  const c1 = await enqueue(a, { kind: "create", body: { entity: "plan", title: "lost" } });
  // The server commits, the answer is lost.
  await a.route("**/api/records/**", async (route) => { await route.fetch(); await route.abort("connectionreset"); }, { times: 1 });
  const rep = await flush(a);
  expect(rep.deferred).toBe(1);
  const deferred = (await rows(a))[0];
  const d1 = await enqueue(a, { kind: "delete", target: c1.target });
  expect(d1).toMatchObject({ kind: "delete", target: c1.target, successorOf: c1.id });
  await setClock(a, T0 + 60_000);
  const rep2 = await flush(a);
  const first = rep2.receipts[0];
  expect(first).toMatchObject({ id: c1.id, replayed: true, applied: true });
  expect(deferred.fingerprint).toBe(c1.fingerprint);
  expect([rep2.converted, rep2.succeeded]).toEqual([1, 2]);
  expect(await effects(request, user)).toEqual([
    { opId: c1.id, actor: user, kind: "create", target: first.receipt.serverId, count: 1 },
    { opId: d1.id, actor: user, kind: "delete", target: first.receipt.serverId, count: 1 },
  ]);
  expect(await rows(a)).toEqual([]);
});

test("s13 row 6: another owner's row is never claimed or deleted by my flush", async ({ context, request }) => {
  const bob = `b${uid()}`;
  const a = await openTab(context, { db, tab: "tab-a", users: [user, bob] });
  const mine = await enqueue(a, { kind: "update", target: "workout:1", body: { weight: 1 } });
  const theirs = await enqueue(a, { owner: bob, kind: "update", target: "workout:1", body: { weight: 2 } });
  expect(mine.successorOf).toBeUndefined();
  expect(theirs.successorOf).toBeUndefined();
  await flush(a);
  expect(await rows(a, bob)).toEqual([theirs]);
  expect(await effects(request, bob)).toEqual([]);
});

test("s13 row 7: a delete after an in-flight update waits, then resolves a revision conflict under a new id", async ({ context, request }) => {
  const a = await openTab(context, { db, tab: "tab-a", users: [user] });
  const rec = await serverRecord(a);
  const held = await holdRecords(a);
  const u1 = await enqueue(a, { kind: "update", target: rec.serverId, body: { weight: 5 }, revision: 1 });
  await startFlush(a);
  const r = await waitHeld(held);
  const d = await enqueue(a, { kind: "delete", target: rec.serverId, revision: 1 });
  expect(d.successorOf).toBe(u1.id);
  await r.continue();
  const rep = await flushResult(a);
  expect([rep.succeeded, rep.conflicts]).toEqual([2, 1]);
  const eff = await effects(request, user);
  const del = eff.find((e) => e.kind === "delete");
  expect(del.opId).not.toBe(d.id);
  expect(del).toMatchObject({ target: rec.serverId, count: 1 });
  expect(eff.some((e) => e.opId === d.id)).toBe(false);
  expect(await rows(a)).toEqual([]);
});

test("s13 row 8: edits of another entity type in flight follow the same successor rule", async ({ context, request }) => {
  const a = await openTab(context, { db, tab: "tab-a", users: [user] });
  const rec = await serverRecord(a, { entity: "plan", title: "p" });
  const held = await holdRecords(a);
  const p1 = await enqueue(a, { kind: "update", target: rec.serverId, body: { title: "q" } });
  await startFlush(a);
  const r = await waitHeld(held);
  const u = await enqueue(a, { kind: "update", target: rec.serverId, body: { title: "r" } });
  expect(u.successorOf).toBe(p1.id);
  const d = await enqueue(a, { kind: "delete", target: rec.serverId });
  expect(d.successorOf).toBe(p1.id);
  expect((await rows(a)).map((x) => x.id).sort()).toEqual([p1.id, d.id].sort());
  await r.continue();
  expect((await flushResult(a)).succeeded).toBe(2);
  expect((await effects(request, user)).slice(-2).map((e) => [e.opId, e.kind])).toEqual([[p1.id, "update"], [d.id, "delete"]]);
});

test("s13 row 9: an older writer's sending row is in flight until its lease ends, then resent with the same id", async ({ context, request }) => {
  const a = await openTab(context, { db, tab: "tab-a", users: [user] });
  const rec = await serverRecord(a);
  const old = {
    id: `old-${uid()}`, owner: user, target: rec.serverId, kind: "update", body: { weight: 7 },
    savedAt: T0 - 5_000, state: "sending", sentAt: T0 - 1_000, legacyField: { v: 0 },
  };
  await putRaw(a, db, [old]);
  expect((await flush(a)).claimed).toBe(0);
  expect(await rows(a)).toEqual([old]);
  const s = await enqueue(a, { kind: "update", target: rec.serverId, body: { weight: 8 } });
  expect(s.successorOf).toBe(old.id);
  expect((await rows(a))[0]).toEqual(old);
  await setClock(a, T0 + LEASE);
  const rep = await flush(a);
  expect(rep.claimed).toBe(2);
  expect((await effects(request, user)).slice(-2).map((e) => e.opId)).toEqual([old.id, s.id]);
  expect(await rows(a)).toEqual([]);
});

test("s13 row 10: an intent whose create row vanished is converted from the looked-up receipt, else blocked and kept", async ({ context, request }) => {
  const a = await openTab(context, { db, tab: "tab-a", users: [user] });
  const cid = `c-${uid()}`;
  const created = await request.post("/api/records/workout", {
    headers: { Authorization: `Bearer ${user}.other-tab`, "Idempotency-Key": cid }, data: { entity: "workout", weight: 1 },
  });
  const { serverId } = await created.json();
  const known = { id: `i-${uid()}`, owner: user, target: `pending:${cid}`, kind: "update", body: { weight: 3 }, savedAt: T0, state: "queued", successorOf: cid };
  const unknown = { id: `j-${uid()}`, owner: user, target: "pending:nope", kind: "delete", body: null, savedAt: T0, state: "queued", successorOf: "nope" };
  await putRaw(a, db, [known, unknown]);
  const rep = await flush(a);
  expect([rep.converted, rep.succeeded, rep.blocked]).toEqual([1, 1, 1]);
  expect((await effects(request, user)).find((e) => e.opId === known.id)).toMatchObject({ kind: "update", target: serverId, count: 1 });
  const left = await rows(a);
  expect(left).toHaveLength(1);
  expect(left[0]).toMatchObject({ id: unknown.id, state: "blocked", blockedCode: "PREDECESSOR_RECEIPT_UNKNOWN", target: "pending:nope" });
});

test("s13 row 11: a tab closed while sending is taken over after the lease; exactly one row remains until sent", async ({ context, request }) => {
  const a = await openTab(context, { db, tab: "tab-a", users: [user] });
  const b = await openTab(context, { db, tab: "tab-b", users: [user] });
  const c1 = await enqueue(a, { kind: "create", body: { entity: "workout", weight: 9 } });
  const held = await holdRecords(a);
  await startFlush(a);
  await waitHeld(held);
  await a.close();
  expect((await flush(b)).claimed).toBe(0);
  // A restart: a new page of the same origin sees the one row, claimed by the closed tab.
  const c = await openTab(context, { db, tab: "tab-c", users: [user] });
  const left = await rows(c);
  expect(left).toHaveLength(1);
  expect(left[0].claim).toMatchObject({ tabId: "tab-a", fence: 1 });
  await setClock(b, T0 + LEASE + 1);
  const rep = await flush(b);
  expect([rep.claimed, rep.succeeded]).toEqual([1, 1]);
  expect(await rows(c)).toEqual([]);
  expect(await timesApplied(request, c1.id)).toBe(1);
});
