// Issue 11, item 4: would Web Locks help a page and the service worker drain one queue?
// The same queue is drained by the demo page and its service worker at once, twice: free
// for all (claims alone decide), and with a per-owner lock taken with `ifAvailable` (the
// context that gets it drains, the other stays idle). Prints wall time and wasted claims
// (`stale`: rows the other context took first). The lock is taken in the code evaluated
// here, in both contexts, so the package and the demo are unchanged by the experiment.
// Since the package's own flushes take turns (src/turn.rs), "free for all" runs with those
// turns: the comparison is now the package's turns against an `ifAvailable` lock.
import { expect, test, type BrowserContext, type Page } from "@playwright/test";

const N = Number(process.env.LOCKS_ROWS ?? 100);
const RUNS = Number(process.env.LOCKS_RUNS ?? 3);

async function openPage(context: BrowserContext, db: string, user: string): Promise<Page> {
  const page = await context.newPage();
  await page.goto(`/?${new URLSearchParams({ db, users: user, autoflush: "0", sw: "1" })}`);
  await page.waitForFunction(() => (window as any).outboxDemo?.ready === true);
  await page.evaluate(() => (window as any).outboxDemo.serviceWorker());
  return page;
}

async function run(browser: any, locks: boolean, i: number) {
  const context = await browser.newContext();
  const user = `bench${Date.now()}${i}`;
  const page = await openPage(context, `locks-${user}`, user);
  const [worker] = context.serviceWorkers();
  // Let the worker's start flush (on an empty queue) end first, so both start together.
  await expect.poll(() => worker.evaluate(() => (self as any).outboxSw.history.length)).toBeGreaterThan(0);
  await page.evaluate(async (n) => {
    const { outbox, owner } = (window as any).outboxDemo;
    for (let k = 0; k < n; k++) await outbox.enqueue({ owner: owner(), kind: "create", body: { entity: "plan", title: `t${k}` } });
  }, N);
  const lockName = `outbox-flush:${user}`;
  const t0 = Date.now();
  const [pageRep, swRep] = await Promise.all([
    page.evaluate(async ({ locks, lockName }) => {
      const flush = () => (window as any).outboxDemo.flushNow();
      if (!locks) return flush();
      return navigator.locks.request(lockName, { ifAvailable: true }, (lock) => (lock ? flush() : null));
    }, { locks, lockName }),
    worker.evaluate(async ({ locks, lockName }) => {
      const flush = () => (self as any).outboxSw.flushAll("bench").then((r: any) => r.report);
      if (!locks) return flush();
      return (navigator as any).locks.request(lockName, { ifAvailable: true }, (lock: unknown) => (lock ? flush() : null));
    }, { locks, lockName }),
  ]);
  const ms = Date.now() - t0;
  const left = await page.evaluate(async () => (await (window as any).outboxDemo.outbox.rows((window as any).outboxDemo.owner())).length);
  // With a lock the idle context sends nothing; rows it would have taken wait for the holder.
  const sw = swRep ?? { claimed: 0, stale: 0 };
  const pg = pageRep ?? { claimed: 0, stale: 0 };
  await context.close();
  return { ms, left, pageClaimed: pg.claimed, swClaimed: sw.claimed, stale: pg.stale + sw.stale };
}

test(`page + service worker draining ${N} rows: claims alone vs a per-owner Web Lock`, async ({ browser }) => {
  for (const locks of [false, true]) {
    for (let i = 0; i < RUNS; i++) {
      const r = await run(browser, locks, i);
      console.log(`${locks ? "web lock " : "no lock  "} run ${i + 1}: ${r.ms} ms, page sent ${r.pageClaimed}, ` +
        `service worker sent ${r.swClaimed}, stale claims ${r.stale}, rows left ${r.left}`);
    }
  }
});
