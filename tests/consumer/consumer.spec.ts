// The package as installed from its tarball into a Vite app and built for production
// (run.sh): the page, a dedicated module worker and a module service worker open,
// enqueue and flush.
import { expect, test, type Page } from "@playwright/test";

async function open(page: Page, db: string): Promise<void> {
  const wasm: string[] = [];
  page.on("response", (r) => {
    if (r.url().endsWith(".wasm")) wasm.push(`${r.status()} ${new URL(r.url()).pathname}`);
  });
  await page.goto(`/?db=${db}`);
  await expect(page.locator("#status")).toHaveText(/^ready /);
  // The module came from the build's assets, as Vite emitted it from the installed package.
  expect(wasm).toEqual([expect.stringMatching(/^200 \/assets\/outbox_idb_bg-[\w-]+\.wasm$/)]);
}

test("the built app opens without init(), enqueues, flushes and lists rows", async ({ page }) => {
  await open(page, `page-${Date.now()}`);
  const queued = await page.evaluate(async () => {
    const c = window.consumer!;
    await c.enqueue("alice", "workout:1", { weight: 80 });
    await c.enqueue("alice", "workout:2", { weight: 90 });
    return (await c.rows("alice")).map((r) => (r.undecodable ? "undecodable" : `${r.target}:${r.state}`));
  });
  expect(queued.sort()).toEqual(["workout:1:queued", "workout:2:queued"]);
  const report = await page.evaluate(() => window.consumer!.flush("alice"));
  expect(report.succeeded).toBe(2);
  expect(report.receipts.map((r) => (r.receipt as { serverId: string }).serverId).sort()).toEqual(["srv-1", "srv-2"]);
  expect(await page.evaluate(() => window.consumer!.rows("alice"))).toEqual([]);
});

test("a dedicated module worker opens the same database, enqueues and flushes; the page sees it", async ({ page }) => {
  await open(page, `worker-${Date.now()}`);
  const pageTab = await page.evaluate(() => document.querySelector("#status")!.textContent!.slice("ready ".length));
  const result = await page.evaluate(() => window.consumer!.inWorker("bob"));
  expect(result.report.succeeded).toBe(1);
  expect(result.enqueued).not.toBe("");
  expect(result.tabId).not.toBe(pageTab);
  expect(await page.evaluate(() => window.consumer!.rows("bob"))).toEqual([]);
  // The worker's commits reached the page's subscribers over the BroadcastChannel.
  await expect.poll(() => page.evaluate(() => window.consumer!.notices.filter((n) => n.startsWith("other:")).length)).toBeGreaterThan(0);
});

test("a module service worker opens the same database, enqueues and flushes; the page sees it", async ({ page }) => {
  await open(page, `sw-${Date.now()}`);
  const result = await page.evaluate(() => window.consumer!.inServiceWorker("carol"));
  expect(result.report.succeeded).toBe(1);
  expect(result.enqueued).not.toBe("");
  expect(await page.evaluate(() => window.consumer!.rows("carol"))).toEqual([]);
  await expect.poll(() => page.evaluate(() => window.consumer!.notices.filter((n) => n.startsWith("other:")).length)).toBeGreaterThan(0);
});

test("<outbox-inspector> shows another page's rows live: state, claim, successor, attempts, error, metrics", async ({ browser }) => {
  // Two pages of one context share one IndexedDB: page A writes, page B only inspects.
  const context = await browser.newContext();
  const db = `inspector-${Date.now()}`;
  const a = await context.newPage();
  const b = await context.newPage();
  await open(a, `${db}&tab=tab-a`);
  await open(b, `${db}&tab=tab-b&inspect=alice`);
  const inspector = b.locator("outbox-inspector");
  const row = (id: string) => inspector.locator(`tr[data-id="${id}"]`);
  const col = (id: string, name: string) => row(id).locator(`td[data-col="${name}"]`);
  await expect(inspector.locator("[part=metrics]")).toHaveText(/^total 0 · queued 0/);

  // A enqueues two rows of one record and claims the first: B sees the claim and the successor.
  const ids = await a.evaluate(async () => {
    const o = window.consumer!.outbox;
    const first = (await o.enqueue({ owner: "alice", kind: "update", target: "workout:1", body: { weight: 80 } }))!;
    const ticket = (await o.claim("alice", first.id))!;
    const second = (await o.enqueue({ owner: "alice", kind: "update", target: "workout:1", body: { weight: 85 } }))!;
    (window as unknown as { ticket: unknown }).ticket = ticket;
    return { first: first.id, second: second.id };
  });
  await expect(row(ids.first)).toHaveAttribute("data-state", "sending");
  await expect(col(ids.first, "claim")).toHaveText(/^tab-a · fence 1 · \d+ s left$/);
  await expect(col(ids.first, "attempts")).toHaveText("1");
  await expect(col(ids.second, "state")).toHaveText("queued");
  await expect(col(ids.second, "successorOf")).toHaveText(ids.first.slice(0, 8));
  await expect(inspector.locator("[part=metrics]")).toHaveText(/^total 2 · queued 1 · sending 1 · held 0 · blocked 0 · undecodable 0/);

  // A's answer is a 503: B sees the row queued again, its claim expired, the error.
  await a.evaluate(async (id) => {
    const o = window.consumer!.outbox;
    const ticket = (window as unknown as { ticket: { tabId: string; fence: number } }).ticket;
    await o.ack("alice", id, ticket, { type: "transient", code: "HTTP_503" });
  }, ids.first);
  await expect(row(ids.first)).toHaveAttribute("data-state", "queued");
  await expect(col(ids.first, "claim")).toHaveText("tab-a · fence 1 · expired");
  await expect(col(ids.first, "error")).toHaveText("HTTP_503");

  // A hostile body is shown as text, never run as markup.
  await a.evaluate(() =>
    window.consumer!.outbox.enqueue({ owner: "alice", kind: "update", target: "<img src=x onerror=alert(1)>", body: {} }),
  );
  await expect(inspector.locator("td[data-col=target]", { hasText: "<img src=x onerror=alert(1)>" })).toHaveCount(1);
  await expect(inspector.locator("img")).toHaveCount(0);

  // Everything sent (the 503'd row once its backoff, at most 1 s, has passed): B's table empties.
  await expect
    .poll(async () => {
      await a.evaluate(() => window.consumer!.outbox.flush({ owner: "alice", send: () => ({ type: "success", receipt: null }) }));
      return inspector.locator("tr[data-id]").count();
    }, { timeout: 15_000, intervals: [500] })
    .toBe(0);
  await expect(inspector.locator("[part=metrics]")).toHaveText(/^total 0 /);
  await context.close();
});

test("tab-outbox/react: useLiveRecords shows another page's records live, and re-renders only when they change", async ({ browser }) => {
  const context = await browser.newContext();
  const db = `react-${Date.now()}`;
  const a = await context.newPage();
  const b = await context.newPage();
  await open(a, `${db}&tab=tab-a`);
  await open(b, `${db}&tab=tab-b&react`);
  const todos = b.locator("#todos li");
  await expect(b.locator("#todos")).toBeAttached(); // read: an empty list
  await expect(todos).toHaveCount(0);
  // Page A writes a todo with its operation: page B's component shows it.
  await a.evaluate(() =>
    window.consumer!.outbox.enqueue(
      { owner: "alice", kind: "create", body: { title: "milk" } },
      { writes: [{ store: "todos", put: { key: "t:1", title: "milk", done: false } }] },
    ),
  );
  await expect(todos).toHaveText(["milk"]);
  const rendersAfterMilk = await b.evaluate(() => window.consumer!.renders.count);
  // Queue-only commits (a failing attempt) and a write leaving the todos as they were: no render.
  await a.evaluate(async () => {
    const o = window.consumer!.outbox;
    await o.flush({ owner: "alice", send: () => ({ type: "transient", code: "HTTP_503" }) });
    await o.enqueue({ owner: "alice", kind: "update", target: "t:1", body: {} }, { writes: [{ store: "todos", patch: "t:1", set: { title: "milk" } }] });
  });
  await b.waitForTimeout(500);
  expect(await b.evaluate(() => window.consumer!.renders.count)).toBe(rendersAfterMilk);
  // A change: one more render with the fresh records.
  await a.evaluate(() =>
    window.consumer!.outbox.enqueue({ owner: "alice", kind: "update", target: "t:1", body: {} }, { writes: [{ store: "todos", patch: "t:1", set: { done: true } }] }),
  );
  await expect(todos).toHaveText(["milk ✓"]);
  await context.close();
});
