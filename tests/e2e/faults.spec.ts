// Fault injection from the test: each operation's effect is applied exactly once.
import { test, expect, type Route } from "@playwright/test";
import { T0, uid, openTab, rows, enqueue, flush, flushResult, setClock, effects, timesApplied, serverRecord, waitHeld, LEASE } from "./helpers";

let user: string;
let db: string;
test.beforeEach(() => {
  user = `u${uid()}`;
  db = `db-${uid()}`;
});

test("a request that fails before reaching the server is retried and applied once", async ({ context, request }) => {
  const a = await openTab(context, { db, tab: "tab-a", users: [user] });
  const c = await enqueue(a, { kind: "create", body: { entity: "workout", weight: 10 } });
  await a.route("**/api/records/**", (r) => r.abort("internetdisconnected"), { times: 1 });
  const rep = await flush(a);
  expect(rep.deferred).toBe(1);
  expect(await timesApplied(request, c.id)).toBe(0);
  const row = (await rows(a))[0];
  expect(row.evidence).toMatchObject({ attemptCount: 1, lastErrorCode: "NETWORK" });
  await setClock(a, T0 + 60_000);
  expect((await flush(a)).succeeded).toBe(1);
  expect(await timesApplied(request, c.id)).toBe(1);
});

test("a response lost after the server committed is replayed, not applied twice", async ({ context, request }) => {
  const a = await openTab(context, { db, tab: "tab-a", users: [user] });
  const rec = await serverRecord(a);
  const u = await enqueue(a, { kind: "update", target: rec.serverId, body: { weight: 20 }, revision: 1 });
  await a.route("**/api/records/**", async (r) => { await r.fetch(); await r.abort("connectionreset"); }, { times: 1 });
  expect((await flush(a)).deferred).toBe(1);
  expect(await timesApplied(request, u.id)).toBe(1);
  await setClock(a, T0 + 60_000);
  const rep = await flush(a);
  expect(rep.receipts[0]).toMatchObject({ id: u.id, replayed: true });
  expect(rep.counters.replays).toBe(1);
  expect(await timesApplied(request, u.id)).toBe(1);
  expect(await rows(a)).toEqual([]);
});

test("503 with Retry-After defers the row until then", async ({ context, request }) => {
  const a = await openTab(context, { db, tab: "tab-a", users: [user] });
  const c = await enqueue(a, { kind: "create", body: { entity: "plan", title: "later" } });
  await a.route("**/api/records/**", (r) => r.fulfill({ status: 503, headers: { "Retry-After": "120" }, body: "" }), { times: 1 });
  expect((await flush(a)).deferred).toBe(1);
  const row = (await rows(a))[0];
  expect(row.nextAttemptAt).toBeGreaterThanOrEqual(T0 + 120_000);
  expect(row.evidence.lastErrorCode).toBe("HTTP_503");
  await setClock(a, T0 + 119_000);
  expect((await flush(a)).claimed).toBe(0);
  await setClock(a, T0 + 121_000 + LEASE);
  expect((await flush(a)).succeeded).toBe(1);
  expect(await timesApplied(request, c.id)).toBe(1);
});

test("401 holds the row and ends the flush; after a new login the held rows go", async ({ context, request }) => {
  const a = await openTab(context, { db, tab: "tab-a", users: [user] });
  const ops = [];
  for (const w of [1, 2, 3]) ops.push(await enqueue(a, { kind: "create", body: { entity: "workout", weight: w } }));
  await a.evaluate(() => window.outboxDemo.expireSession());
  const rep = await flush(a);
  expect(rep.held).toBeGreaterThanOrEqual(1);
  const states = (await rows(a)).map((r) => r.state);
  expect(states.filter((s) => s === "held").length).toBe(rep.held);
  expect(states.filter((s) => s === "queued").length).toBe(3 - rep.held);
  expect(await effects(request, user)).toEqual([]);
  await a.evaluate(() => window.outboxDemo.login());
  expect((await flush(a)).succeeded).toBe(3);
  for (const op of ops) expect(await timesApplied(request, op.id)).toBe(1);
});

// §6: rows claimed ahead of their sends when a 401 arrives are released, and none of them
// leaves on the expired session — neither the one released first nor the next one waiting
// behind it (the 401's answer made room among the sends, and releasing one pumps the flush:
// planted 15-sent-after-auth).
test("401 while rows wait claimed ahead: no further request leaves, and they are released", async ({ context, request }) => {
  const a = await openTab(context, { db, tab: "tab-a", users: [user] });
  const ops = [];
  for (const w of [1, 2, 3, 4, 5, 6]) ops.push(await enqueue(a, { kind: "create", body: { entity: "workout", weight: w } }));
  const held: Route[] = [];
  let passed = 0;
  // The first two requests are held; any later one (there must be none) goes through, so that
  // a bug shows as a count, not as a flush that never ends.
  await a.route("**/api/records/**", (r) => (held.length < 2 ? held.push(r) : (passed++, r.continue())));
  await a.evaluate(() => { window.__flush = window.outboxDemo.flushNow({ concurrency: 2 }); });
  await waitHeld(held, 2);
  // Two sends out, and two rows claimed ahead of them, waiting for room.
  await expect.poll(async () => (await rows(a)).filter((r) => r.state === "sending").length).toBe(4);
  await held[0].fulfill({ status: 401, body: "" });
  // The answer is written (the row held) and the two rows waiting are released before the
  // second send answers: room was made among the sends meanwhile.
  await expect.poll(async () => (await rows(a)).filter((r) => r.state === "held").length).toBe(1);
  await expect.poll(async () => (await rows(a)).filter((r) => r.state === "sending").length).toBe(1);
  await held[1].continue();
  const rep = await flushResult(a);
  expect(passed).toBe(0);
  expect(rep).toMatchObject({ claimed: 2, held: 1, succeeded: 1, released: 2 });
  const left = await rows(a);
  expect(left.map((r) => r.state).sort()).toEqual(["held", "queued", "queued", "queued", "queued"]);
  const sent = ops.filter((op) => !left.some((r) => r.id === op.id));
  expect(sent).toHaveLength(1);
  expect(await timesApplied(request, sent[0].id)).toBe(1);
  expect(await effects(request, user)).toHaveLength(1);
});

test("422 validation blocks the row; retryBlocked re-issues it under a new id", async ({ context, request }) => {
  const a = await openTab(context, { db, tab: "tab-a", users: [user] });
  const bad = await enqueue(a, { kind: "create", body: { entity: "workout", weight: -5 } });
  const rep = await flush(a);
  expect(rep.blocked).toBe(1);
  const row = (await rows(a))[0];
  expect(row).toMatchObject({ id: bad.id, state: "blocked", blockedCode: "INVALID" });
  const retried = await a.evaluate(([o, id]) => window.outboxDemo.outbox.retryBlocked(o, id, { entity: "workout", weight: 5 }), [user, bad.id]);
  expect(retried).toBe(true);
  const fresh = (await rows(a))[0];
  expect(fresh.id).not.toBe(bad.id);
  expect(fresh).toMatchObject({ state: "queued", target: bad.target, savedAt: bad.savedAt, body: { weight: 5 } });
  expect((await flush(a)).succeeded).toBe(1);
  expect(await timesApplied(request, fresh.id)).toBe(1);
  expect(await timesApplied(request, bad.id)).toBe(0);
});

test("reusing an operation id with another payload is refused by the gate, never a silent success", async ({ context, request }) => {
  const a = await openTab(context, { db, tab: "tab-a", users: [user] });
  const c = await enqueue(a, { kind: "create", body: { entity: "workout", weight: 30 } });
  await flush(a);
  const reuse = await request.post("/api/records/workout", {
    headers: { Authorization: `Bearer ${user}.x`, "Idempotency-Key": c.id }, data: { entity: "workout", weight: 31 },
  });
  expect(reuse.status()).toBe(422);
  expect((await reuse.json()).code).toBe("PAYLOAD_CONFLICT");
  expect(await timesApplied(request, c.id)).toBe(1);
  // The client classifies that answer as a permanent PAYLOAD_CONFLICT.
  const classified = await a.evaluate(async () => {
    const { classifyHttp } = await import("/pkg/outbox_idb.js");
    return classifyHttp(422, {}, { code: "PAYLOAD_CONFLICT" });
  });
  expect(classified).toEqual({ type: "permanent", code: "PAYLOAD_CONFLICT" });
});

test("after a reload the claim, writer and evidence are intact", async ({ context }) => {
  const a = await openTab(context, { db, tab: "tab-a", users: [user] });
  await enqueue(a, { kind: "create", body: { entity: "plan", title: "keep" } });
  await a.route("**/api/records/**", (r) => r.fulfill({ status: 500, body: "" }), { times: 1 });
  await flush(a);
  const before = (await rows(a))[0];
  await a.reload();
  await a.waitForFunction(() => window.outboxDemo?.ready === true);
  const after = (await rows(a))[0];
  expect(after).toEqual(before);
  expect(after.claim).toMatchObject({ tabId: "tab-a", fence: 1, expiresAt: T0 });
  expect(after.writer.bundle).toMatch(/^outbox-idb@/);
  expect(after.evidence).toMatchObject({ attemptCount: 1, lastAttemptAt: T0, lastErrorCode: "HTTP_500" });
});
