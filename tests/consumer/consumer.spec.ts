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
