// Issue 11: the package in the demo's service worker (www/sw.js) and in a dedicated worker
// (www/worker.js), each a tab of its own over the page's database, draining one queue with
// the pages. These pages use the real clock (no `clock=`): the service worker has no
// injected clock, and claims are compared across the two.
import { test, expect, type BrowserContext, type Page } from "@playwright/test";
import { uid, rows, effects } from "./helpers";

const SYNC_TAG = "outbox-flush";

let user: string;
let db: string;
test.beforeEach(() => {
  user = `u${uid()}`;
  db = `db-${uid()}`;
});

/** A page of the demo with its service worker registered and active (no timer flushes). */
async function openPage(context: BrowserContext, o: { lease?: number; sw?: boolean } = {}): Promise<Page> {
  const page = await context.newPage();
  const q = new URLSearchParams({ db, users: user, autoflush: "0", sw: o.sw === false ? "0" : "1", lease: String(o.lease ?? 10_000) });
  await page.goto(`/?${q}`);
  await page.waitForFunction(() => window.outboxDemo?.ready === true);
  if (o.sw !== false) expect(await page.evaluate(async () => !!(await window.outboxDemo.serviceWorker())?.active)).toBe(true);
  return page;
}

const createPlans = (page: Page, n: number): Promise<any[]> =>
  page.evaluate(async (n) => {
    const made = [];
    for (let i = 0; i < n; i++) made.push(await window.outboxDemo.createRecord("plan", `p${i}`));
    return made;
  }, n);

/** Applied-effect count per operation id of this test's user. */
async function appliedById(request: any): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const e of await effects(request, user)) counts[e.opId] = (counts[e.opId] ?? 0) + e.count;
  return counts;
}

/** Every request to the records API that the gate answered, from the pages and the
 * service worker alike (Playwright reports both), by operation id. */
function countSends(context: BrowserContext): Record<string, number> {
  const sends: Record<string, number> = {};
  context.on("response", (r) => {
    const key = r.request().headers()["idempotency-key"];
    if (key && r.url().includes("/api/records")) sends[key] = (sends[key] ?? 0) + 1;
  });
  return sends;
}

/** A DevTools session on `page` with the ServiceWorker domain on; the registration's id. */
async function swDevTools(context: BrowserContext, page: Page) {
  const cdp = await context.newCDPSession(page);
  const registrations: string[] = [];
  cdp.on("ServiceWorker.workerRegistrationUpdated", (e: any) => {
    for (const r of e.registrations) if (!r.isDeleted && !registrations.includes(r.registrationId)) registrations.push(r.registrationId);
  });
  await cdp.send("ServiceWorker.enable");
  await expect.poll(() => registrations.length).toBe(1);
  return { cdp, registrationId: registrations[0] };
}

test("offline edits, every page closed, back online: the browser's sync event has the service worker send each row exactly once", async ({ context, request }) => {
  const sends = countSends(context);
  const page = await openPage(context);
  const [worker] = context.serviceWorkers();
  // The worker's start flush runs when it starts, maybe still now: let it end first (a flush
  // asked for now runs after it, on the empty queue), so that the edits below meet no flush.
  await worker.evaluate(() => (self as any).outboxSw.flushAll("settled"));
  await context.setOffline(true);
  const made = await createPlans(page, 4); // enqueued while offline: the page registers the sync tag
  expect(await page.evaluate(async () => (await navigator.serviceWorker.ready).sync.getTags())).toContain(SYNC_TAG);
  await page.close(); // no page of the app is left
  expect(await appliedById(request)).toEqual({});
  // Offline, the browser holds the sync event back: no flush of the worker took a row.
  expect(await worker.evaluate(() => (self as any).outboxSw.history.filter((h: any) => h.claimed > 0))).toEqual([]);

  // Back online, headless Chromium fires `sync` by itself (Background Sync follows the
  // context's network here), and the worker's `sync` listener sends the rows.
  await context.setOffline(false);
  await expect.poll(async () => Object.keys(await appliedById(request)).length, { timeout: 30_000 }).toBe(4);
  // The rows are applied before the worker's flush ends and writes its history entry.
  const synced = () => worker.evaluate(() => (self as any).outboxSw.history.filter((h: any) => h.why === "sync" && h.claimed > 0).length);
  await expect.poll(synced, { timeout: 30_000 }).toBeGreaterThan(0);
  const history = await worker.evaluate(() => (self as any).outboxSw.history);
  expect(history.reduce((n: number, h: any) => n + h.claimed, 0), JSON.stringify(history)).toBe(4);
  const applied = await appliedById(request);
  for (const row of made) expect(applied[row.id], row.id).toBe(1);
  // Sent once each over the network (a repeat would be answered from the gate's ledger
  // without a second effect, so the answered requests are counted too).
  for (const row of made) expect(sends[row.id], row.id).toBe(1);
  const again = await openPage(context, { sw: false });
  expect(await rows(again)).toEqual([]);
});

test("a page and the service worker flush one queue at the same time: every row sent once, none lost", async ({ context, request }) => {
  const sends = countSends(context);
  const page = await openPage(context);
  const made = await createPlans(page, 24);
  const [pageReport, sw] = await page.evaluate(() =>
    Promise.all([window.outboxDemo.flushNow(), window.outboxDemo.flushInServiceWorker()]),
  );
  expect(sw.error).toBeUndefined();
  expect(sw.tabId).toMatch(/^sw-/);
  expect(sw.why).toBe("message");
  // Each row claimed by exactly one of the two: the claims add up, no row is sent twice.
  // (The worker's flush on start may have taken some rows as they were created.)
  const swHistory = await context.serviceWorkers()[0].evaluate(() => (self as any).outboxSw.history);
  expect(pageReport.claimed + swHistory.reduce((n: number, h: any) => n + h.claimed, 0)).toBe(24);
  const applied = await appliedById(request);
  for (const row of made) {
    expect(applied[row.id], row.id).toBe(1);
    expect(sends[row.id], row.id).toBe(1);
  }
  expect(await rows(page)).toEqual([]);
});

test("the service worker stopped mid-flush: its claimed rows are taken over after the lease, each applied once", async ({ context, request }) => {
  const lease = 6_000;
  const page = await openPage(context, { lease });
  // The worker's sends never answered (its test hook; a network that hangs), so that it is
  // stopped with its rows claimed and their sends outstanding.
  const [worker] = context.serviceWorkers();
  // Its flush on start (an empty queue) ends first: the one asked for below runs after it.
  await expect.poll(() => worker.evaluate(() => (self as any).outboxSw.history.length)).toBeGreaterThan(0);
  await worker.evaluate(() => (self as any).outboxSw.holdSends());
  const made = await createPlans(page, 3);
  await page.evaluate(() => { void window.outboxDemo.flushInServiceWorker(); });
  await expect.poll(() => worker.evaluate(() => (self as any).outboxSw.waiting()), { timeout: 20_000 }).toBe(3);
  const claimed = await rows(page);
  expect(claimed.map((r) => r.state)).toEqual(["sending", "sending", "sending"]);
  for (const r of claimed) expect(r.claim.tabId).toMatch(/^sw-/);
  // The demo's inspector says which context holds each claim.
  await page.evaluate(() => window.outboxDemo.refresh());
  await expect(page.locator("#inspector tbody tr", { hasText: "service worker" })).toHaveCount(3);

  // Stop it the way the browser stops an idle or misbehaving worker (DevTools' "stop"), and
  // see the browser report it stopped.
  const { cdp } = await swDevTools(context, page);
  const statuses: string[] = [];
  cdp.on("ServiceWorker.workerVersionUpdated", (e: any) => statuses.push(...e.versions.map((v: any) => v.runningStatus)));
  await cdp.send("ServiceWorker.stopAllWorkers");
  await expect.poll(() => statuses.at(-1)).toBe("stopped");
  expect(await appliedById(request)).toEqual({});

  // While the lease runs the rows are in flight elsewhere: the page leaves them alone.
  const early = await page.evaluate(() => window.outboxDemo.flushNow());
  expect(early.claimed).toBe(0);
  // After the lease the page takes them over and sends them.
  let succeeded = 0;
  await expect
    .poll(async () => {
      succeeded += (await page.evaluate(() => window.outboxDemo.flushNow())).succeeded;
      return succeeded;
    }, { timeout: 30_000, intervals: [500] })
    .toBe(3);
  const applied = await appliedById(request);
  for (const row of made) expect(applied[row.id], row.id).toBe(1);
  expect(await rows(page)).toEqual([]);
});

test("a dedicated worker is a tab of its own: it enqueues and flushes like a page", async ({ context, request }) => {
  const page = await openPage(context, { sw: false });
  await page.evaluate(() => {
    (window as any).__notices = [];
    window.outboxDemo.outbox.subscribe((n: unknown) => (window as any).__notices.push(n));
  });
  const result = await page.evaluate(
    ({ db, user }) =>
      new Promise<any>((ok) => {
        const worker = new Worker("/worker.js", { type: "module" });
        worker.onmessage = (e) => { ok(e.data); worker.terminate(); };
        worker.postMessage({ db, session: { user, token: `${user}.worker` }, creates: ["a", "b", "c"] });
      }),
    { db, user },
  );
  expect(result.error).toBeUndefined();
  expect(result.tabId).toMatch(/^worker-/);
  expect(result.report.succeeded).toBe(3);
  const applied = await appliedById(request);
  for (const id of result.ids) expect(applied[id], id).toBe(1);
  expect(await rows(page)).toEqual([]);
  // The worker's commits reached the page over the BroadcastChannel, as another tab's do.
  await expect
    .poll(() => page.evaluate(() => (window as any).__notices.filter((n: any) => n.tabId.startsWith("worker-")).length))
    .toBeGreaterThan(0);
});
