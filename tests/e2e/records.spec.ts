// The app's own records and their queue rows (issue "app records"): the demo keeps its
// records in the outbox's database. The invariant, checked after every crash: a pending
// record has the operation that sends it, and a queued create has its record. Crashes are
// real: the browser process is SIGKILLed on a persistent profile and launched again.
import { test, expect, type BrowserContext, type Page } from "@playwright/test";
import { mkdirSync } from "node:fs";
import { launch, killBrowser } from "../soak/browser";
import { uid, T0, LEASE, effects, timesApplied, holdRecords, waitHeld } from "./helpers";

type Local = { rows: any[]; recs: any[] };

async function openDemo(context: BrowserContext, o: { db: string; tab: string; user: string; clock?: number }) {
  const page = await context.newPage();
  const q = new URLSearchParams({ db: o.db, tab: o.tab, users: o.user, clock: String(o.clock ?? T0), autoflush: "0", lease: String(LEASE) });
  await page.goto(`/?${q}`);
  await page.waitForFunction(() => window.outboxDemo?.ready === true);
  return page;
}

const local = (page: Page): Promise<Local> =>
  page.evaluate(async () => {
    const d = window.outboxDemo;
    const owner = d.owner();
    const rows = (await d.outbox.rows(owner)).filter((r: any) => !r.undecodable);
    const recs = await d.outbox.records("records", { index: "byOwner", range: owner });
    return { rows, recs };
  });

/** Both directions of the invariant; returns the state for further checks. */
async function invariant(page: Page): Promise<Local> {
  const state = await local(page);
  const keys = new Set(state.recs.map((r) => r.key));
  for (const rec of state.recs.filter((r) => String(r.key).startsWith("pending:"))) {
    expect(state.rows.some((r) => r.kind === "create" && r.target === rec.key), `pending record ${rec.key} has its create`).toBe(true);
  }
  // A create in flight when its record was deleted keeps its row, followed by the delete.
  const deleting = new Set(state.rows.filter((r) => r.kind === "delete").map((r) => r.target));
  for (const row of state.rows.filter((r) => r.kind === "create")) {
    expect(keys.has(row.target) || deleting.has(row.target), `queued create ${row.target} has its record`).toBe(true);
  }
  return state;
}

const create = (page: Page, weight: number) =>
  page.evaluate((w) => window.outboxDemo.createRecord("workout", w), weight);

const flushPage = (page: Page) => page.evaluate(() => window.outboxDemo.flushNow());

async function crashable(baseURL: string | undefined) {
  const profile = test.info().outputPath(`profile-${uid()}`);
  mkdirSync(profile, { recursive: true });
  return { profile, context: await launch(profile, baseURL!) };
}

test("a record write that fails after another was issued leaves neither record nor row", async ({ context }) => {
  const user = `u${uid()}`;
  const page = await openDemo(context, { db: `db-${uid()}`, tab: "a", user });
  const code = await page.evaluate(async (owner) => {
    try {
      await window.outboxDemo.outbox.enqueue(
        { owner, kind: "update", target: "workout:x", body: { weight: 1 } },
        { writes: [{ store: "records", put: { key: "workout:x", owner } }, { store: "records", put: { owner } }] },
      );
      return "written";
    } catch (e: any) {
      return e.code;
    }
  }, user);
  expect(code).toBe("INVALID_ARGUMENT");
  expect(await local(page)).toEqual({ rows: [], recs: [] });
});

test("browser killed during a burst of edits: every record has its operation and every create its record", async ({ baseURL }) => {
  const user = `u${uid()}`;
  const db = `db-${uid()}`;
  let { profile, context } = await crashable(baseURL);
  let page = await openDemo(context, { db, tab: "a", user });
  // Fire edits without awaiting them and kill the browser while they commit.
  await page.evaluate(() => {
    for (let i = 0; i < 40; i++) window.outboxDemo.createRecord("workout", 100 + i);
  });
  await killBrowser(context, profile);
  context = await launch(profile, baseURL!);
  page = await openDemo(context, { db, tab: "a2", user });
  const state = await invariant(page);
  expect(state.recs.length).toBe(state.rows.length);
  await context.close();
});

test("browser killed after sending, before the answer: resent after the lease, one effect, records reconciled", async ({ baseURL, request }) => {
  const user = `u${uid()}`;
  const db = `db-${uid()}`;
  let { profile, context } = await crashable(baseURL);
  let page = await openDemo(context, { db, tab: "a", user });
  const row = await create(page, 70);
  const held = await holdRecords(page);
  await page.evaluate(() => { window.__flush = window.outboxDemo.flushNow(); });
  await waitHeld(held); // the row is `sending`; the request never reached the server
  await killBrowser(context, profile);
  context = await launch(profile, baseURL!);
  page = await openDemo(context, { db, tab: "b", user, clock: T0 + LEASE + 1 });
  let state = await invariant(page);
  expect(state.rows[0].state).toBe("sending");
  await flushPage(page);
  state = await invariant(page);
  expect(state.rows).toEqual([]);
  expect(state.recs).toHaveLength(1);
  expect(state.recs[0].key).toMatch(/^workout:/);
  expect(state.recs[0].revision).toBe(1);
  expect(await timesApplied(request, row.id)).toBe(1);
  await context.close();
});

test("browser killed after the server committed, before reconciliation: the replayed receipt reconciles the same", async ({ baseURL, request }) => {
  const user = `u${uid()}`;
  const db = `db-${uid()}`;
  let { profile, context } = await crashable(baseURL);
  let page = await openDemo(context, { db, tab: "a", user });
  const row = await create(page, 71);
  let committed = false;
  await page.route("**/api/records/**", async (route) => {
    await route.fetch(); // the gate commits; the answer never reaches the page
    committed = true;
  });
  await page.evaluate(() => { window.__flush = window.outboxDemo.flushNow(); });
  await expect.poll(() => committed).toBe(true);
  await killBrowser(context, profile);
  expect(await timesApplied(request, row.id)).toBe(1);
  context = await launch(profile, baseURL!);
  page = await openDemo(context, { db, tab: "b", user, clock: T0 + LEASE + 1 });
  expect((await invariant(page)).recs[0].key).toBe(row.target); // still pending, still sent by its row
  const report = await flushPage(page);
  expect(report.receipts[0].replayed).toBe(true);
  const state = await invariant(page);
  expect(state.rows).toEqual([]);
  const serverId = report.receipts[0].receipt.serverId;
  expect(state.recs).toEqual([expect.objectContaining({ key: serverId, weight: 71, revision: 1, error: null })]);
  expect(await timesApplied(request, row.id)).toBe(1);
  await context.close();
});

test("browser killed while flushing many creates (records re-keyed in the ACKs): each record once, under one key", async ({ baseURL, request }) => {
  const user = `u${uid()}`;
  const db = `db-${uid()}`;
  let { profile, context } = await crashable(baseURL);
  let page = await openDemo(context, { db, tab: "a", user });
  for (let i = 0; i < 30; i++) await create(page, 200 + i);
  await page.evaluate(() => { window.__flush = window.outboxDemo.flushNow(); });
  await expect.poll(async () => (await effects(request, user)).length, { timeout: 15_000 }).toBeGreaterThan(3);
  await killBrowser(context, profile);
  context = await launch(profile, baseURL!);
  page = await openDemo(context, { db, tab: "b", user, clock: T0 + LEASE + 1 });
  let state = await invariant(page);
  expect(state.recs).toHaveLength(30);
  await flushPage(page);
  state = await invariant(page);
  expect(state.rows).toEqual([]);
  expect(state.recs.map((r) => r.weight).sort()).toEqual(Array.from({ length: 30 }, (_, i) => 200 + i));
  expect(state.recs.every((r) => /^workout:/.test(r.key))).toBe(true);
  const applied = await effects(request, user);
  expect(applied).toHaveLength(30);
  expect(applied.every((e) => e.count === 1)).toBe(true);
  await context.close();
});

test("two pages edit one record offline, one goes online: the last edit wins, one effect each, same view", async ({ context, request }) => {
  const user = `u${uid()}`;
  const db = `db-${uid()}`;
  const a = await openDemo(context, { db, tab: "a", user });
  const b = await openDemo(context, { db, tab: "b", user });
  await create(a, 60);
  await flushPage(a);
  const [rec] = (await local(a)).recs;
  await a.evaluate(() => window.outboxDemo.setOffline(true));
  await b.evaluate(() => window.outboxDemo.setOffline(true));
  await a.evaluate((r) => window.outboxDemo.updateRecord(r.key, { weight: 61 }, r.revision), rec);
  await b.evaluate((r) => window.outboxDemo.updateRecord(r.key, { weight: 62 }, r.revision), rec);
  for (const p of [a, b]) expect((await local(p)).recs[0].weight).toBe(62); // shown at once, offline
  await b.evaluate(() => window.outboxDemo.setOffline(false));
  await flushPage(b);
  for (const p of [a, b]) {
    const state = await invariant(p);
    expect(state.rows).toEqual([]);
    expect(state.recs).toEqual([expect.objectContaining({ key: rec.key, weight: 62, revision: 2, error: null })]);
    await p.evaluate(() => window.outboxDemo.refresh());
    await expect(p.locator("#records tbody tr")).toHaveCount(1);
    await expect(p.locator("#records tbody tr input")).toHaveValue("62");
    await expect(p.locator("#records tbody tr td.sync")).toHaveText("synced");
  }
  // The two offline edits were merged into one operation: one effect for it.
  expect((await effects(request, user)).map((e) => `${e.kind}:${e.count}`)).toEqual(["create:1", "update:1"]);
});

test("a record deleted while its create was in flight is never resurrected by the create's late success", async ({ context, request }) => {
  const user = `u${uid()}`;
  const db = `db-${uid()}`;
  const a = await openDemo(context, { db, tab: "a", user });
  const b = await openDemo(context, { db, tab: "b", user });
  const row = await create(a, 90);
  const held = await holdRecords(a);
  await a.evaluate(() => { window.__flush = window.outboxDemo.flushNow(); });
  const route = await waitHeld(held);
  await b.evaluate((t) => window.outboxDemo.deleteRecord(t, null), row.target); // gone locally at once
  expect((await local(b)).recs).toEqual([]);
  await route.continue(); // the create's success arrives late
  await a.evaluate(() => window.__flush);
  await flushPage(a); // the delete, converted once the create's receipt is known, goes out
  for (const p of [a, b]) {
    const state = await local(p);
    expect(state.recs, "not resurrected").toEqual([]);
    expect(state.rows).toEqual([]);
  }
  expect((await effects(request, user)).map((e) => `${e.kind}:${e.count}`)).toEqual(["create:1", "delete:1"]);
  expect(await timesApplied(request, row.id)).toBe(1);
});
