// SPEC §8 inside one page, and §12 progress: what the package promises about one tab's own
// flushes, driven through the built package exactly as an app calls it (its own `send`).
import { test, expect, type Page } from "@playwright/test";
import { T0, LEASE, uid, openTab, rows, enqueue, setClock, putRaw } from "./helpers";

let user: string;
let db: string;
test.beforeEach(() => {
  user = `u${uid()}`;
  db = `db-${uid()}`;
});

declare global {
  interface Window {
    __sent: string[];
    __gate: Array<() => void>;
    __flushes: Promise<any>[];
    __notices: any[];
    __most: number;
  }
}

/**
 * Starts `n` flushes of the page's own outbox at once, with a `send` that records every call
 * and waits until the test opens the gate (`openGate`). Answers are successes.
 */
async function startGatedFlushes(page: Page, n: number): Promise<void> {
  await page.evaluate((n) => {
    window.__sent = window.__sent ?? [];
    window.__gate = window.__gate ?? [];
    window.__flushes = window.__flushes ?? [];
    window.__most = window.__most ?? 0;
    let outstanding = 0;
    const { outbox, owner } = window.outboxDemo;
    const send = async (op: any) => {
      window.__sent.push(op.id);
      outstanding += 1;
      window.__most = Math.max(window.__most, outstanding);
      await new Promise<void>((go) => window.__gate.push(go));
      outstanding -= 1;
      return { type: "success", receipt: { serverId: op.target, revision: 1 } };
    };
    for (let i = 0; i < n; i++) window.__flushes.push(outbox.flush({ owner: owner(), send }));
  }, n);
}

const sent = (page: Page): Promise<string[]> => page.evaluate(() => window.__sent);
const waiting = (page: Page): Promise<number> => page.evaluate(() => window.__gate.length);
const openGate = (page: Page): Promise<void> =>
  page.evaluate(() => { const g = window.__gate; window.__gate = []; g.forEach((go) => go()); });
const settle = (page: Page): Promise<any[]> => page.evaluate(() => Promise.all(window.__flushes));

test("§8 a send that outlives its lease is not sent again by the same page", async ({ context }) => {
  const a = await openTab(context, { db, tab: "tab-a", users: [user] });
  const c = await enqueue(a, { kind: "create", body: { entity: "plan", title: "x" } });
  await startGatedFlushes(a, 1);
  await expect.poll(() => waiting(a)).toBe(1);
  await setClock(a, T0 + LEASE + 1); // the attempt is still awaited; its lease is over
  await startGatedFlushes(a, 1);
  const second = await a.evaluate(() => window.__flushes[1]);
  expect(second.claimed).toBe(0);
  expect(await sent(a)).toEqual([c.id]); // one attempt, the first flush's
  await openGate(a);
  const [first] = await settle(a);
  expect([first.claimed, first.succeeded]).toEqual([1, 1]);
  expect(await rows(a)).toEqual([]);
});

test("§8 overlapping flushes of one page send the rows of one record one at a time", async ({ context }) => {
  const a = await openTab(context, { db, tab: "tab-a", users: [user] });
  // Two rows of one record that do not name each other, as an older writer leaves them.
  await putRaw(a, db, ["r-a", "r-b"].map((id) => ({ id, owner: user, target: "workout:1", kind: "update",
    body: { weight: id }, savedAt: T0, state: "queued" })));
  await startGatedFlushes(a, 3);
  for (let i = 0; i < 2; i++) {
    await expect.poll(() => waiting(a)).toBe(1); // one attempt of the record at a time
    await openGate(a);
  }
  await settle(a);
  expect(await rows(a)).toEqual([]);
  expect(await a.evaluate(() => window.__most)).toBe(1);
  expect(await sent(a)).toEqual(["r-a", "r-b"]);
});

test("§12 a long flush shows its progress to other tabs and in its counters as it goes", async ({ context }) => {
  const a = await openTab(context, { db, tab: "tab-a", users: [user] });
  const b = await openTab(context, { db, tab: "tab-b", users: [user] });
  for (let i = 0; i < 3; i++) await enqueue(a, { kind: "update", target: `workout:${i}`, body: { weight: i } });
  await b.evaluate(() => {
    window.__notices = [];
    window.outboxDemo.outbox.subscribe((n: any) => window.__notices.push(n));
  });
  await a.evaluate(() => {
    window.__gate = [];
    let n = 0;
    const { outbox, owner } = window.outboxDemo;
    window.__flushes = [outbox.flush({
      owner: owner(),
      concurrency: 1,
      send: async (op: any) => {
        n += 1;
        if (n === 3) await new Promise<void>((go) => window.__gate.push(go));
        return { type: "success", receipt: { serverId: op.target, revision: 2 } };
      },
    })];
  });
  await expect.poll(() => waiting(a)).toBe(1); // two rows done, the third send waits
  const mid = await a.evaluate(() => window.outboxDemo.outbox.metrics(window.outboxDemo.owner()));
  expect(mid.attempts.success).toBe(2);
  expect(mid.total).toBe(1);
  await expect.poll(() => b.evaluate(() => window.__notices.filter((n) => n.change === "flush").length))
    .toBeGreaterThan(0);
  await openGate(a);
  const [rep] = await settle(a);
  expect(rep.succeeded).toBe(3);
});
