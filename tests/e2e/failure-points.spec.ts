// Every failure point of the checklist, one test each, named after it. Each drives the demo
// app (and through it the package) in Chromium against the gate over real HTTP, and asserts
// the queue in IndexedDB and the effects the gate applied.
import { test, expect, type Route } from "@playwright/test";
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  T0, LEASE, uid, openTab, rows, enqueue, flush, startFlush, flushResult, setClock, effects, timesApplied,
  holdRecords, waitHeld, serverRecord, putRaw, freePort, startGate,
} from "./helpers";

let user: string;
let db: string;
test.beforeEach(() => {
  user = `u${uid()}`;
  db = `db-${uid()}`;
});

test("crash right after a row becomes sending: resent after the lease, one effect", async ({ context, request }) => {
  const a = await openTab(context, { db, tab: "tab-a", users: [user] });
  const c = await enqueue(a, { kind: "create", body: { entity: "workout", weight: 11 } });
  // Tab A claims the row (state sending, fence 1) and dies before its request leaves.
  const ticket = await a.evaluate(([o, id]) => window.outboxDemo.outbox.claim(o, id), [user, c.id]);
  expect(ticket).toMatchObject({ tabId: "tab-a", fence: 1 });
  await a.close();
  const b = await openTab(context, { db, tab: "tab-b", users: [user], clock: T0 + LEASE - 1 });
  expect((await rows(b))[0]).toMatchObject({ id: c.id, state: "sending" });
  expect((await flush(b)).claimed).toBe(0);
  expect(await timesApplied(request, c.id)).toBe(0);
  await setClock(b, T0 + LEASE);
  const rep = await flush(b);
  expect(rep.succeeded).toBe(1);
  expect(rep.receipts[0]).toMatchObject({ id: c.id, replayed: false, applied: true });
  expect(await timesApplied(request, c.id)).toBe(1);
  expect(await rows(b)).toEqual([]);
});

test("server committed, answer lost: replayed on the resend, one effect", async ({ context, request }) => {
  const a = await openTab(context, { db, tab: "tab-a", users: [user] });
  const c = await enqueue(a, { kind: "create", body: { entity: "plan", title: "once" } });
  await a.route("**/api/records/**", async (r) => { await r.fetch(); await r.abort("connectionreset"); }, { times: 1 });
  const rep = await flush(a);
  expect(rep.deferred).toBe(1);
  expect(await timesApplied(request, c.id)).toBe(1);
  expect((await rows(a))[0]).toMatchObject({ id: c.id, state: "queued", evidence: { attemptCount: 1 } });
  await setClock(a, T0 + 60_000);
  const again = await flush(a);
  expect(again.receipts[0]).toMatchObject({ id: c.id, replayed: true, applied: true });
  expect(await timesApplied(request, c.id)).toBe(1);
  expect(await rows(a)).toEqual([]);
});

/** A gate of this test's own, on a file ledger, that the test can crash (SIGKILL) and restart. */
const ownGate = (dbFile: string, port: number): Promise<ChildProcess> =>
  startGate(port, ["--db", dbFile, "--test-endpoints", "--work-delay-ms", "1500", "--processing-lease-ms", "2000"], "/api/effects");

test("server crashed while holding the reservation: recovered after its lease, one effect", async ({ context }) => {
  const dir = mkdtempSync(join(tmpdir(), "gate-crash-"));
  const port = await freePort();
  let gate = await ownGate(join(dir, "ledger.sqlite"), port);
  try {
    const a = await openTab(context, { db, tab: "tab-a", users: [user] });
    // The page's API calls go to this test's gate (same origin for the page).
    const toOwnGate = async (route: Route) => {
      const url = new URL(route.request().url());
      try {
        const res = await route.fetch({ url: `http://127.0.0.1:${port}${url.pathname}` });
        await route.fulfill({ response: res });
      } catch {
        await route.abort("connectionreset").catch(() => {});
      }
    };
    await a.route("**/api/**", toOwnGate);
    const c = await enqueue(a, { kind: "create", body: { entity: "workout", weight: 12 } });
    await startFlush(a);
    // The gate has reserved the key and is working (1.5 s): it dies now.
    await new Promise((ok) => setTimeout(ok, 700));
    gate.kill("SIGKILL");
    const rep = await flushResult(a);
    expect(rep.deferred).toBe(1);
    gate = await ownGate(join(dir, "ledger.sqlite"), port);
    const own = async () => (await (await fetch(`http://127.0.0.1:${port}/api/effects`)).json()).filter((e: any) => e.opId === c.id);
    expect(await own()).toEqual([]);
    // Within the reservation's lease the key is still the crashed worker's: IN_PROGRESS.
    await setClock(a, T0 + 60_000);
    const early = await flush(a);
    const row = (await rows(a))[0];
    if (early.succeeded === 0) expect(row.evidence.lastErrorCode).toBe("IN_PROGRESS");
    // After it, the resend takes the reservation over and is applied once.
    await new Promise((ok) => setTimeout(ok, 2_100));
    await setClock(a, T0 + 120_000);
    let done = early.succeeded;
    for (let i = 0; i < 5 && done === 0; i++) {
      done = (await flush(a)).succeeded;
      if (!done) await setClock(a, T0 + 180_000 + i * 60_000);
    }
    expect(done).toBe(1);
    expect((await own()).map((e: any) => e.count)).toEqual([1]);
    expect(await rows(a)).toEqual([]);
  } finally {
    gate.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  }
});

test("same key with another payload: refused and blocked, never a silent success", async ({ context, request }) => {
  const a = await openTab(context, { db, tab: "tab-a", users: [user] });
  const c = await enqueue(a, { kind: "create", body: { entity: "workout", weight: 13 } });
  const stored = (await rows(a))[0];
  await flush(a);
  expect(await timesApplied(request, c.id)).toBe(1);
  // Another writer stores a row under the applied operation's id with another payload.
  const { fingerprint: _drop, ...raw } = stored;
  await putRaw(a, db, [{ ...raw, body: { entity: "workout", weight: 14 } }]);
  const rep = await flush(a);
  expect([rep.succeeded, rep.blocked]).toEqual([0, 1]);
  expect((await rows(a))[0]).toMatchObject({ id: c.id, state: "blocked", blockedCode: "PAYLOAD_CONFLICT" });
  expect(await timesApplied(request, c.id)).toBe(1);
  const server = await (await request.get("/api/records", { headers: { Authorization: `Bearer ${user}.x` } })).json();
  expect(server.map((r: any) => r.body.weight)).toEqual([13]);
});

test("two attempts of one operation at once: one effect", async ({ context, request }) => {
  const a = await openTab(context, { db, tab: "tab-a", users: [user] });
  const b = await openTab(context, { db, tab: "tab-b", users: [user], clock: T0 + LEASE + 1 });
  const rec = await serverRecord(a);
  const u = await enqueue(a, { kind: "update", target: rec.serverId, body: { weight: 15 } });
  const heldA = await holdRecords(a);
  await startFlush(a);
  const ra = await waitHeld(heldA);
  // B's clock is past A's lease: it takes the row over and sends it too.
  const heldB = await holdRecords(b);
  await startFlush(b);
  const rb = await waitHeld(heldB);
  expect((await rows(b))[0].claim).toMatchObject({ tabId: "tab-b", fence: 2 });
  // Both requests reach the server together.
  await Promise.all([ra.continue(), rb.continue()]);
  const [repA, repB] = [await flushResult(a), await flushResult(b)];
  expect(await timesApplied(request, u.id)).toBe(1);
  const applied = [...repA.receipts, ...repB.receipts].filter((r: any) => r.id === u.id);
  expect(applied.length).toBeGreaterThanOrEqual(1);
  // Whatever the other attempt got (a replay, or IN_PROGRESS and a later replay), it is
  // never a second effect.
  await setClock(b, T0 + 120_000);
  await flush(b);
  expect(await timesApplied(request, u.id)).toBe(1);
  expect(await rows(b)).toEqual([]);
});

for (const status of [400, 422]) {
  test(`${status}: blocked for the user, never retried until the user acts`, async ({ context, request }) => {
    const a = await openTab(context, { db, tab: "tab-a", users: [user] });
    const c = await enqueue(a, { kind: "create", body: { entity: "workout", weight: status === 422 ? -1 : 16 } });
    if (status === 400) {
      await a.route("**/api/records/**", (r) => r.fulfill({ status: 400, contentType: "application/json", body: '{"code":"BAD"}' }), { times: 1 });
    }
    const rep = await flush(a);
    expect(rep.blocked).toBe(1);
    expect((await rows(a))[0]).toMatchObject({ id: c.id, state: "blocked", blockedCode: "INVALID" });
    let sent = 0;
    await a.route("**/api/records/**", (r) => { sent++; return r.continue(); });
    await setClock(a, T0 + 3_600_000);
    expect((await flush(a)).claimed).toBe(0);
    expect(sent).toBe(0);
    expect(await timesApplied(request, c.id)).toBe(0);
    expect(await a.evaluate(([o, id]) => window.outboxDemo.outbox.retryBlocked(o, id, { entity: "workout", weight: 17 }), [user, c.id])).toBe(true);
    expect((await flush(a)).succeeded).toBe(1);
    expect(sent).toBe(1);
  });
}

test("429: retried no earlier than its Retry-After hint", async ({ context, request }) => {
  const a = await openTab(context, { db, tab: "tab-a", users: [user] });
  const c = await enqueue(a, { kind: "create", body: { entity: "plan", title: "slow down" } });
  const sentAt: number[] = [];
  await a.route("**/api/records/**", async (r) => {
    sentAt.push(await a.evaluate(() => window.__now));
    if (sentAt.length === 1) return r.fulfill({ status: 429, headers: { "Retry-After": "30" }, contentType: "application/json", body: "{}" });
    return r.continue();
  });
  expect((await flush(a)).deferred).toBe(1);
  expect((await rows(a))[0].nextAttemptAt).toBeGreaterThanOrEqual(T0 + 30_000);
  for (const t of [T0 + 1_000, T0 + 15_000, T0 + 29_999]) {
    await setClock(a, t);
    expect((await flush(a)).claimed).toBe(0);
  }
  expect(sentAt).toEqual([T0]);
  await setClock(a, T0 + 30_000 + LEASE);
  expect((await flush(a)).succeeded).toBe(1);
  expect(sentAt.length).toBe(2);
  expect(sentAt[1] - sentAt[0]).toBeGreaterThanOrEqual(30_000);
  expect(await timesApplied(request, c.id)).toBe(1);
});

test("logout while a flush runs: nothing of the old account is sent with the new session", async ({ context, request }) => {
  const bob = `b${uid()}`;
  const a = await openTab(context, { db, tab: "tab-a", users: [user, bob] });
  // Two rows of one record of the old account; the second (never merged) goes only after
  // the first's answer, in the same flush.
  const rec = await serverRecord(a);
  const u1 = await enqueue(a, { kind: "update", target: rec.serverId, body: { weight: 18 } });
  const u2 = await enqueue(a, { kind: "update", target: rec.serverId, body: { weight: 19 }, merge: false });
  expect(u2.successorOf).toBe(u1.id);
  const seen: Array<{ key: string; actor: string }> = [];
  const held: Route[] = [];
  await a.route("**/api/records/**", (r) => {
    const auth = r.request().headers()["authorization"] ?? "";
    seen.push({ key: r.request().headers()["idempotency-key"], actor: auth.replace("Bearer ", "").split(".")[0] });
    if (seen.length === 1) held.push(r);
    else r.continue();
  });
  await startFlush(a);
  await expect.poll(() => held.length).toBe(1);
  // The person logs out and another account logs in while u1 is on the wire.
  await a.selectOption("#user", bob);
  await held[0].continue();
  await flushResult(a);
  for (const s of seen) expect(s.actor, `operation ${s.key} went out under ${s.actor}`).toBe(user);
  expect(await effects(request, bob)).toEqual([]);
  expect(await timesApplied(request, u1.id)).toBe(1);
  expect(seen.some((s) => s.key === u2.id && s.actor === bob)).toBe(false);
  // The old account's next row waits, held, for that account to log in again.
  expect((await rows(a, user)).map((r) => [r.id, r.state])).toEqual([[u2.id, "held"]]);
});
