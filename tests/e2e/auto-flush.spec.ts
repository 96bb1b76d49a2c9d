// Issue 34, part 3: an outbox opened with autoFlush flushes on its own — after enqueues
// (debounced), on `online`, when the page becomes visible, on an interval, at the report's
// nextDueAt — one flush at a time, and not after close().
import { test, expect, type Page } from "@playwright/test";
import { uid } from "./helpers";
import { packagePage } from "./configured";

const NEVER = 600_000; // a debounce or interval that does not fire during a test

/**
 * Opens `window.t.outbox` with autoFlush `settings` and a send that succeeds, counting in
 * `window.t` the sends, the flushes, and the most flushes ever running at once. Resolves once
 * the flush the scheduler starts on open has ended: a row enqueued later is this test's own
 * (on a loaded machine that start flush, still running, took the test's row — CI, twice).
 */
async function openAuto(page: Page, settings: Record<string, number>, open: Record<string, unknown> = {}) {
  await page.evaluate(async ({ db, settings, open }) => {
    const { Outbox } = window.pkg;
    const t = window.t;
    Object.assign(t, { sent: [], flushes: 0, ended: 0, running: 0, mostRunning: 0, reports: [] });
    // Counted on the prototype, before open: the scheduler calls outbox.flush() from open on.
    const flush = Outbox.prototype.flush;
    Outbox.prototype.flush = async function (this: unknown, extra: unknown) {
      t.flushes += 1;
      t.running += 1;
      t.mostRunning = Math.max(t.mostRunning, t.running);
      try {
        const report = await flush.call(this, extra);
        t.reports.push(report);
        return report;
      } finally {
        t.running -= 1;
        t.ended += 1;
      }
    };
    t.outbox = await Outbox.open({
      dbName: db,
      owner: "alice",
      ...open,
      send: async (op: any) => {
        if (t.hold) await t.hold;
        if (t.failNext) {
          t.failNext = false;
          // A floor under the jittered backoff: the row is not due again within this flush.
          return { type: "transient", code: "HTTP_503", retryAfterMs: 300 };
        }
        t.sent.push(op.target);
        return { type: "success", receipt: null };
      },
      autoFlush: settings,
    });
  }, { db: `db-${uid()}`, settings, open });
  await expect.poll(() => page.evaluate(() => window.t.ended)).toBeGreaterThanOrEqual(1);
  await page.evaluate(() => (window.t.flushes = 0));
}

const enqueue = (page: Page, target: string) =>
  page.evaluate((target) => window.t.outbox.enqueue({ owner: "alice", kind: "update", target, body: { v: 1 } }), target);
const sent = (page: Page) => page.evaluate(() => window.t.sent as string[]);

test("after enqueues, debounced: a burst of edits is sent by one flush", async ({ context }) => {
  const page = await packagePage(context);
  await openAuto(page, { debounceMs: 300, intervalMs: 0 });
  await page.evaluate(async () => {
    for (let i = 0; i < 5; i++) await window.t.outbox.enqueue({ owner: "alice", kind: "update", target: `t:${i}`, body: { i } });
  });
  await expect.poll(() => sent(page)).toHaveLength(5);
  expect(await page.evaluate(() => window.t.flushes)).toBe(1);
});

test("when the network comes back (online)", async ({ context }) => {
  const page = await packagePage(context);
  await openAuto(page, { debounceMs: NEVER, intervalMs: 0 });
  await context.setOffline(true);
  await enqueue(page, "t:offline");
  await page.waitForTimeout(300);
  expect(await sent(page)).toEqual([]);
  await context.setOffline(false);
  await expect.poll(() => sent(page)).toEqual(["t:offline"]);
});

test("when the page becomes visible", async ({ context }) => {
  const page = await packagePage(context);
  await openAuto(page, { debounceMs: NEVER, intervalMs: 0 });
  await enqueue(page, "t:visible");
  await page.waitForTimeout(300);
  expect(await sent(page)).toEqual([]);
  await page.evaluate(() => document.dispatchEvent(new Event("visibilitychange")));
  await expect.poll(() => sent(page)).toEqual(["t:visible"]);
});

test("on the interval", async ({ context }) => {
  const page = await packagePage(context);
  await openAuto(page, { debounceMs: NEVER, intervalMs: 400 });
  await enqueue(page, "t:interval");
  await expect.poll(() => sent(page)).toEqual(["t:interval"]);
});

test("one flush at a time: requests during a flush make one more after it, not one each", async ({ context }) => {
  const page = await packagePage(context);
  await openAuto(page, { debounceMs: NEVER, intervalMs: 0 });
  await page.evaluate(() => {
    window.t.hold = new Promise((release) => (window.t.release = release));
  });
  await enqueue(page, "t:first");
  await page.evaluate(() => document.dispatchEvent(new Event("visibilitychange"))); // flush 1, held in send
  await expect.poll(() => page.evaluate(() => window.t.running)).toBe(1);
  await page.evaluate(() => {
    for (let i = 0; i < 5; i++) document.dispatchEvent(new Event("visibilitychange"));
  });
  await page.evaluate(() => window.t.release());
  await expect.poll(() => page.evaluate(() => window.t.flushes)).toBe(2);
  await page.waitForTimeout(300);
  expect(await page.evaluate(() => ({ flushes: window.t.flushes, most: window.t.mostRunning }))).toEqual({ flushes: 2, most: 1 });
});

test("close() stops it: no flush on online, visible or after a debounce", async ({ context }) => {
  const page = await packagePage(context);
  await openAuto(page, { debounceMs: 200, intervalMs: 200 });
  await enqueue(page, "t:before");
  await expect.poll(() => sent(page)).toEqual(["t:before"]);
  await page.waitForTimeout(300);
  const before = await page.evaluate(() => {
    window.t.outbox.close();
    document.dispatchEvent(new Event("visibilitychange"));
    dispatchEvent(new Event("online"));
    return window.t.flushes;
  });
  await page.waitForTimeout(800);
  expect(await page.evaluate(() => window.t.flushes)).toBe(before);
});

test("at the report's nextDueAt, a row deferred by a failure is retried with no other trigger", async ({ context }) => {
  const page = await packagePage(context);
  await openAuto(page, { debounceMs: NEVER, intervalMs: 0 }, { backoff: { baseMs: 500, capMs: 500 } });
  await page.evaluate(() => (window.t.failNext = true));
  await enqueue(page, "t:retried");
  await page.evaluate(() => document.dispatchEvent(new Event("visibilitychange"))); // the failing attempt
  // The failed attempt's report says when the row is due (the retry may already have run).
  await expect.poll(() => page.evaluate(() => window.t.reports.some((r) => r.deferred === 1))).toBe(true);
  const failed = await page.evaluate(() => window.t.reports.find((r) => r.deferred === 1));
  expect(typeof failed.nextDueAt).toBe("number");
  await expect.poll(() => sent(page), { timeout: 15_000 }).toEqual(["t:retried"]);
});

test("offline: the flush is told so and claims nothing", async ({ context }) => {
  const page = await packagePage(context);
  await openAuto(page, { debounceMs: NEVER, intervalMs: 0 });
  await enqueue(page, "t:offline");
  await context.setOffline(true);
  const report = await page.evaluate(() => window.t.outbox.flush());
  await context.setOffline(false);
  expect(report.offline).toBe(true);
  expect(report.claimed).toBe(0);
});
