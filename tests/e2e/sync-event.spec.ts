// Issue 34 (leftover): the package's own Background Sync support (npm/schedule.js). A
// service worker that only imports the package and opens its outbox with `autoFlush` answers
// `sync` of its tag by flushing (and rejects the event while rows are left, so the browser
// fires it again); a page registers the tag with `registerSync()`, and by itself after an
// autoFlush flush that ended offline or with deferred rows. (sw.spec.ts covers the demo's
// hand-written handler, www/sw.js.)
//
// The worker is tests/e2e/fixtures/sync-sw/sync-sw.js. The gate serves one `--www` directory,
// so this spec starts a gate of its own on that directory (and the built package at /pkg);
// no gate change. The `sync` events are fired with DevTools' ServiceWorker.dispatchSyncEvent.
import { test, expect, type BrowserContext, type CDPSession, type Page, type Worker } from "@playwright/test";
import type { ChildProcess } from "node:child_process";
import { freePort, startGate, uid } from "./helpers";

const DEFAULT_TAG = "tab-outbox"; // schedule.js DEFAULT_SYNC_TAG

let gate: ChildProcess;
let base: string;

test.beforeAll(async () => {
  const port = await freePort();
  gate = await startGate(port, ["--db", ":memory:", "--test-endpoints", "--www", "tests/e2e/fixtures/sync-sw", "--pkg", "pkg"]);
  base = `http://127.0.0.1:${port}`;
});
test.afterAll(() => {
  gate?.kill("SIGKILL");
});

let user: string;
let db: string;
test.beforeEach(() => {
  user = `u${uid()}`;
  db = `db-${uid()}`;
});

interface Hook {
  boot: string;
  events: { tag: string; lastChance: boolean }[];
  waits: { tag: string; lastChance: boolean; state: string; error: string | null }[];
  sends: string[];
  reports: any[];
  flushing: number;
  flushed: number;
}

/** What the worker's test hook saw (fixtures/sync-sw/observe.js). */
const seen = (worker: Worker): Promise<Hook> => worker.evaluate(() => JSON.parse(JSON.stringify((self as any).syncTest)));

/** A page of the spec's origin with the package as `window.pkg` and an outbox on `db` (no
 * auto flush: it only enqueues) as `window.t.outbox`. */
async function openPage(context: BrowserContext): Promise<Page> {
  const page = await context.newPage();
  await page.goto(`${base}/index.html`);
  await page.evaluate(async (db) => {
    const w = window as any;
    w.pkg = await import("/pkg/index.js" as string);
    w.t = { outbox: await w.pkg.Outbox.open({ dbName: db }) };
  }, db);
  return page;
}

/** Registers the fixture's worker (the outbox on `db` for `user`, answering `tag`; `extra`:
 * more of its parameters, `budget` its sync budget in ms) and waits until it is active and
 * its outbox open; its DevTools registration id. */
async function registerWorker(context: BrowserContext, page: Page, tag?: string, extra: Record<string, string> = {}) {
  const q = new URLSearchParams({ db, user, ...(tag ? { tag } : {}), ...extra });
  const cdp = await context.newCDPSession(page);
  const registrations: string[] = [];
  cdp.on("ServiceWorker.workerRegistrationUpdated", (e: any) => {
    for (const r of e.registrations) if (!r.isDeleted && !registrations.includes(r.registrationId)) registrations.push(r.registrationId);
  });
  await cdp.send("ServiceWorker.enable");
  await page.evaluate(async (url) => {
    await navigator.serviceWorker.register(url, { type: "module" });
    await navigator.serviceWorker.ready;
  }, `/sync-sw.js?${q}`);
  await expect.poll(() => registrations.length).toBe(1);
  await expect.poll(() => context.serviceWorkers().length).toBe(1);
  const worker = context.serviceWorkers()[0];
  await worker.evaluate(() => (self as any).outboxOpening);
  // The flush of what was queued when the outbox opened (nothing) ends first: rows enqueued
  // after it are sent by nothing but an event.
  await expect.poll(async () => ((h) => h.flushed >= 1 && h.flushing === 0)(await seen(worker))).toBe(true);
  return { cdp, registrationId: registrations[0], worker };
}

const dispatchSync = (cdp: CDPSession, registrationId: string, tag: string, lastChance = false) =>
  cdp.send("ServiceWorker.dispatchSyncEvent", { origin: base, registrationId, tag, lastChance });

/** Enqueues creates of `user` from the page; their operation ids. */
const enqueueCreates = (page: Page, n: number): Promise<string[]> =>
  page.evaluate(async ({ user, n }) => {
    const ids = [];
    for (let i = 0; i < n; i++) {
      const row = await (window as any).t.outbox.enqueue({ owner: user, kind: "create", body: { entity: "plan", title: `p${i}` } });
      ids.push(row.id);
    }
    return ids;
  }, { user, n });

const queued = (page: Page) => page.evaluate((user) => (window as any).t.outbox.rows(user), user) as Promise<any[]>;

/** Applied-effect count per operation id of this test's user (the gate's ledger). */
async function appliedById(): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  const all = await (await fetch(`${base}/api/effects`)).json();
  for (const e of all) if (e.actor === user) counts[e.opId] = (counts[e.opId] ?? 0) + e.count;
  return counts;
}

/** The gate's records of `user` (GET /api/records). */
async function records(): Promise<any[]> {
  const res = await fetch(`${base}/api/records`, { headers: { Authorization: `Bearer ${user}.s1` } });
  return res.json();
}

/** Offline, the page enqueues `n` rows; back online, nothing has sent them. */
async function rowsLeftOffline(context: BrowserContext, page: Page, worker: Worker, n: number): Promise<string[]> {
  await context.setOffline(true);
  const ids = await enqueueCreates(page, n);
  await context.setOffline(false);
  await page.waitForTimeout(500);
  expect((await queued(page)).map((r) => r.state)).toEqual(Array(n).fill("queued"));
  expect((await seen(worker)).sends).toEqual([]);
  expect(await appliedById()).toEqual({});
  return ids;
}

test("the package's service worker answers `sync` of its tag: the rows a page left offline are sent, each applied once", async ({ context }) => {
  const page = await openPage(context);
  const { cdp, registrationId, worker } = await registerWorker(context, page);
  const boot = (await seen(worker)).boot;
  const ids = await rowsLeftOffline(context, page, worker, 3);

  await dispatchSync(cdp, registrationId, DEFAULT_TAG);
  await expect.poll(async () => (await seen(worker)).waits.map((w) => w.state)).toEqual(["fulfilled"]);
  const hook = await seen(worker);
  // The running worker answered (no restart, whose start flush would have sent them too).
  expect(hook.boot).toBe(boot);
  expect(hook.events).toEqual([{ tag: DEFAULT_TAG, lastChance: false }]);
  expect(hook.sends.sort()).toEqual([...ids].sort());
  const applied = await appliedById();
  for (const id of ids) expect(applied[id], id).toBe(1);
  expect(Object.keys(applied)).toHaveLength(3);
  expect((await records()).map((r: any) => r.title ?? r.body?.title).sort()).toEqual(["p0", "p1", "p2"]);
  expect(await queued(page)).toEqual([]);
});

test("a stopped worker woken by `sync` answers it: the package listens before its outbox has opened", async ({ context }) => {
  const page = await openPage(context);
  const { cdp, registrationId, worker } = await registerWorker(context, page);
  const boot = (await seen(worker)).boot;
  const ids = await rowsLeftOffline(context, page, worker, 2);
  // Stopped as the browser stops an idle worker: `sync` starts it again, runs its script and
  // sends the event at once, while `Outbox.open` is still loading the module.
  const statuses: string[] = [];
  cdp.on("ServiceWorker.workerVersionUpdated", (e: any) => statuses.push(...e.versions.map((v: any) => v.runningStatus)));
  await cdp.send("ServiceWorker.stopAllWorkers");
  await expect.poll(() => statuses.at(-1)).toBe("stopped");
  await dispatchSync(cdp, registrationId, DEFAULT_TAG);
  // (Playwright keeps one Worker for the registration's version: it reaches the new run.)
  await expect.poll(async () => (await seen(worker)).boot).not.toBe(boot);
  // The package took the event up (its promise, not only the worker's start flush, sent them).
  await expect.poll(async () => (await seen(worker)).waits.map((w) => [w.tag, w.state])).toEqual([[DEFAULT_TAG, "fulfilled"]]);
  const hook = await seen(worker);
  expect(hook.events).toEqual([{ tag: DEFAULT_TAG, lastChance: false }]);
  expect(hook.sends.sort()).toEqual([...ids].sort());
  const applied = await appliedById();
  for (const id of ids) expect(applied[id], id).toBe(1);
  expect(await queued(page)).toEqual([]);
});

test("rows left after the sync flush (a retryable failure): the sync event's promise rejects, so the browser fires it again", async ({ context }) => {
  const page = await openPage(context);
  const { cdp, registrationId, worker } = await registerWorker(context, page);
  const [id] = await rowsLeftOffline(context, page, worker, 1);
  await worker.evaluate(() => ((self as any).syncTest.failSends = true));

  await dispatchSync(cdp, registrationId, DEFAULT_TAG);
  await expect.poll(async () => (await seen(worker)).waits.map((w) => w.state)).toEqual(["rejected"]);
  const hook = await seen(worker);
  expect(hook.waits[0].error).toMatch(/rows left for a later sync/);
  expect(hook.sends).toEqual([id]); // attempted once, answered 503
  expect(await appliedById()).toEqual({});
  expect((await queued(page)).map((r) => [r.id, r.state])).toEqual([[id, "queued"]]);
});

test("a sync whose budget runs out with rows left rejects too, though they are due at once: resolving it would drop the browser's sync with them queued", async ({ context }) => {
  const page = await openPage(context);
  // A budget of 1 s, sends that take 2 s: the first sends (16 in flight, the other 14 rows
  // claimed ahead) answer after the budget, so the flush stops with rows it never sent.
  const { cdp, registrationId, worker } = await registerWorker(context, page, undefined, { budget: "1000" });
  const ids = await rowsLeftOffline(context, page, worker, 30);
  await worker.evaluate(() => ((self as any).syncTest.delaySendsMs = 2_000));
  const before = (await seen(worker)).reports.length;

  await dispatchSync(cdp, registrationId, DEFAULT_TAG);
  await expect.poll(async () => (await seen(worker)).waits.map((w) => w.state), { timeout: 15_000 }).toEqual(["rejected"]);
  expect((await seen(worker)).waits[0].error).toMatch(/rows left for a later sync/);
  // The sync's flush itself: it sent some rows and released those it had claimed ahead
  // (the stop this test is about), nothing deferred, offline or waiting out a backoff.
  // Every row claimed ahead is released, none sent after the deadline.
  const sync = (await seen(worker)).reports[before];
  expect([sync.claimed, sync.released, sync.deferred, sync.offline]).toEqual([16, 14, 0, false]);
  expect(typeof sync.nextDueAt).toBe("number");
  // The report's `nextDueAt` is the instant the flush stopped: the worker's scheduler
  // flushes again at once (no budget outside a `sync`), and every row is applied once.
  await expect.poll(async () => Object.keys(await appliedById()).sort(), { timeout: 30_000 }).toEqual([...ids].sort());
  expect(Object.values(await appliedById())).toEqual(Array(ids.length).fill(1));
  const sends = (await seen(worker)).sends;
  expect(new Set(sends).size).toBe(sends.length); // none sent twice
  await expect.poll(async () => (await queued(page)).length).toBe(0);
});

test("a sync that finds the rows waiting out a backoff rejects too: resolving it would drop the browser's sync while they wait", async ({ context }) => {
  const page = await openPage(context);
  const { cdp, registrationId, worker } = await registerWorker(context, page);
  // A page's own flush of the row answered a retryable failure: it waits a minute (after
  // such a flush an autoFlush page registers the sync tag, and online the browser fires it
  // at once).
  const report = await page.evaluate(async ({ db, user }) => {
    const w = window as any;
    await w.t.outbox.enqueue({ owner: user, kind: "create", body: { entity: "plan" } });
    return w.t.outbox.flush({ owner: user, send: async () => ({ type: "transient", code: "HTTP_503", retryAfterMs: 60_000 }) });
  }, { db, user });
  expect(report.deferred).toBe(1);

  await dispatchSync(cdp, registrationId, DEFAULT_TAG);
  await expect.poll(async () => (await seen(worker)).waits.map((w) => w.state)).toEqual(["rejected"]);
  expect((await seen(worker)).sends).toEqual([]); // not due: nothing sent, the row still queued
  expect((await queued(page)).map((r) => r.state)).toEqual(["queued"]);
  // Its last chance: the browser will not fire it again, so it resolves.
  await dispatchSync(cdp, registrationId, DEFAULT_TAG, true);
  await expect.poll(async () => (await seen(worker)).waits.map((w) => w.state)).toEqual(["rejected", "fulfilled"]);
});

test("a `sync` event of another tag flushes nothing; one of the outbox's tag then does", async ({ context }) => {
  const tag = `app-sync-${uid()}`;
  const page = await openPage(context);
  const { cdp, registrationId, worker } = await registerWorker(context, page, tag);
  const ids = await rowsLeftOffline(context, page, worker, 2);

  for (const other of [DEFAULT_TAG, `${tag}-other`]) await dispatchSync(cdp, registrationId, other);
  await expect.poll(async () => (await seen(worker)).events.length).toBe(2);
  await page.waitForTimeout(1_000);
  const hook = await seen(worker);
  expect(hook.waits).toEqual([]); // the package did not take the events up
  expect(hook.sends).toEqual([]);
  expect(await appliedById()).toEqual({});
  expect(await queued(page)).toHaveLength(2);

  await dispatchSync(cdp, registrationId, tag);
  await expect.poll(async () => (await seen(worker)).waits.map((w) => [w.tag, w.state])).toEqual([[tag, "fulfilled"]]);
  const applied = await appliedById();
  for (const id of ids) expect(applied[id], id).toBe(1);
  expect(await queued(page)).toEqual([]);
});

test("registerSync(tag) from a page registers the tag with the page's service worker", async ({ context }) => {
  const page = await openPage(context);
  // Without a service worker there is nothing to register with.
  expect(await page.evaluate(() => (window as any).pkg.registerSync("early"))).toBe(false);
  await registerWorker(context, page);
  // Offline, so that the browser keeps the registration instead of firing it at once.
  await context.setOffline(true);
  const tag = `app-sync-${uid()}`;
  expect(await page.evaluate((tag) => (window as any).pkg.registerSync(tag), tag)).toBe(true);
  expect(await page.evaluate(() => (window as any).pkg.registerSync())).toBe(true); // the default tag
  const tags = await page.evaluate(async () => (await navigator.serviceWorker.ready).sync.getTags());
  expect(tags.sort()).toEqual([DEFAULT_TAG, tag].sort());
  await context.setOffline(false);
});

/** Opens `window.t.auto`, an outbox on another database with autoFlush (tag `tag`, no
 * interval) whose send answers a retryable failure, and counts its reports. Resolves once the
 * flush its scheduler starts on open has ended, so the row a test enqueues next is flushed by
 * a counted flush (on a loaded machine the start flush, still running, took it — CI). */
async function openAutoFlush(page: Page, tag: string) {
  await page.evaluate(async ({ db, user, tag }) => {
    const w = window as any;
    w.t.reports = [];
    // Counted on the prototype, before open: the scheduler flushes from open on. The page's
    // other outbox (`t.outbox`, no auto flush) is left out.
    const flush = w.pkg.Outbox.prototype.flush;
    w.pkg.Outbox.prototype.flush = async function (this: unknown, extra: unknown) {
      const report = await flush.call(this, extra);
      if (this !== w.t.outbox) w.t.reports.push(report);
      return report;
    };
    w.t.auto = await w.pkg.Outbox.open({
      dbName: db,
      owner: user,
      send: async () => ({ type: "transient", code: "HTTP_503", retryAfterMs: 60_000 }),
      autoFlush: { syncTag: tag, intervalMs: 0, debounceMs: 50 },
    });
  }, { db: `${db}-page`, user, tag });
  await expect.poll(() => page.evaluate(() => (window as any).t.reports.length)).toBeGreaterThanOrEqual(1);
}

test("a page's autoFlush flush that ends offline registers the sync tag by itself", async ({ context }) => {
  const page = await openPage(context);
  await registerWorker(context, page);
  const tag = `app-sync-${uid()}`;
  await openAutoFlush(page, tag);
  await context.setOffline(true);
  await page.evaluate((user) => (window as any).t.auto.enqueue({ owner: user, kind: "create", body: { entity: "plan" } }), user);
  await expect.poll(() => page.evaluate(() => (window as any).t.reports.some((r: any) => r.offline))).toBe(true);
  await expect.poll(() => page.evaluate(async () => (await navigator.serviceWorker.ready).sync.getTags())).toEqual([tag]);
  await context.setOffline(false);
});

test("a page's autoFlush flush that ends with deferred rows registers the sync tag by itself (online: the browser fires it)", async ({ context }) => {
  const page = await openPage(context);
  const { worker } = await registerWorker(context, page);
  const tag = `app-sync-${uid()}`;
  await openAutoFlush(page, tag);
  await page.evaluate((user) => (window as any).t.auto.enqueue({ owner: user, kind: "create", body: { entity: "plan" } }), user);
  await expect.poll(() => page.evaluate(() => (window as any).t.reports.some((r: any) => r.deferred === 1 && !r.offline))).toBe(true);
  // Online, Chromium fires a registered tag at once: the worker is sent `sync` of it. "At
  // once" is Chromium's scheduling, later on a loaded machine (it missed 10 s once, in the
  // whole suite on 2 cores): the wait is longer than the default.
  await expect.poll(async () => (await seen(worker)).events.map((e) => e.tag), { timeout: 30_000 }).toContain(tag);
});
