// Throughput of the outbox against the raw IndexedDB floor, in the same browser run.
// Prints a table; asserts only that the work was done.
import { test, expect, type Page } from "@playwright/test";

const SIZES = (process.env.BENCH_SIZES ?? "200,1000,3000").split(",").map(Number);

async function tab(context: any, db: string, id: string): Promise<Page> {
  const page = await context.newPage();
  await page.goto(`/bench.html?db=${db}&tab=${id}`);
  await page.waitForFunction(() => (window as any).benchReady === true);
  return page;
}

/** The floor: one readwrite transaction per row doing a get and a put, nothing else. */
async function rawFloor(page: Page, n: number): Promise<number> {
  return page.evaluate(async (n) => {
    const db: IDBDatabase = await new Promise((ok, err) => {
      const r = indexedDB.open(`raw-${Math.random()}`, 1);
      r.onupgradeneeded = () => r.result.createObjectStore("s", { keyPath: "id" }).createIndex("i", ["owner", "target"]);
      r.onsuccess = () => ok(r.result);
      r.onerror = () => err(r.error);
    });
    const t0 = performance.now();
    for (let i = 0; i < n; i++) {
      await new Promise<void>((ok, err) => {
        const tx = db.transaction("s", "readwrite");
        const s = tx.objectStore("s");
        const g = s.index("i").getAll(["bench", `t:${i}`]);
        g.onsuccess = () => s.put({ id: `r${i}`, owner: "bench", target: `t:${i}`, body: { i } });
        tx.oncomplete = () => ok();
        tx.onerror = () => err(tx.error);
      });
    }
    const ms = performance.now() - t0;
    db.close();
    return ms;
  }, n);
}

async function enqueueAll(page: Page, n: number): Promise<number> {
  return page.evaluate(async (n) => {
    const o = (window as any).outbox;
    const t0 = performance.now();
    for (let i = 0; i < n; i++) {
      await o.enqueue({ owner: "bench", kind: "update", target: `workout:${i}`, body: { weight: i } });
    }
    return performance.now() - t0;
  }, n);
}

async function flushAll(page: Page): Promise<{ ms: number; report: any }> {
  return page.evaluate(async () => {
    const o = (window as any).outbox;
    const send = () => ({ type: "success", receipt: { ok: true } });
    const t0 = performance.now();
    const report = await o.flush({ owner: "bench", send });
    return { ms: performance.now() - t0, report };
  });
}

test("outbox throughput vs the raw IndexedDB floor", async ({ context }) => {
  const lines: string[] = [];
  const fmt = (ms: number, n: number) => `${ms.toFixed(0).padStart(7)} ms  ${(ms / n).toFixed(3).padStart(7)} ms/row`;
  for (const n of SIZES) {
    const db = `bench-${n}-${Math.random().toString(36).slice(2)}`;
    const a = await tab(context, db, "tab-a");
    const floor = await rawFloor(a, n);
    const enq = await enqueueAll(a, n);
    const one = await flushAll(a);
    expect(one.report.succeeded).toBe(n);
    await enqueueAll(a, n);
    const b = await tab(context, db, "tab-b");
    const t0 = Date.now();
    const [ra, rb] = await Promise.all([flushAll(a), flushAll(b)]);
    const two = Date.now() - t0;
    expect(ra.report.succeeded + rb.report.succeeded).toBe(n);
    const stale = ra.report.stale + rb.report.stale;
    lines.push(
      `N=${n}`,
      `  raw IndexedDB floor (1 rw tx/row)  ${fmt(floor, n)}`,
      `  enqueue                            ${fmt(enq, n)}   ×${(enq / floor).toFixed(2)} floor`,
      `  flush, 1 tab                       ${fmt(one.ms, n)}   ×${(one.ms / floor).toFixed(2)} floor`,
      `  flush, 2 tabs at once              ${fmt(two, n)}   ×${(two / floor).toFixed(2)} floor; ` +
        `split ${ra.report.succeeded}/${rb.report.succeeded}, stale claims ${stale} (${((100 * stale) / n).toFixed(1)}%)`,
    );
    await a.close();
    await b.close();
  }
  console.log("\n" + lines.join("\n") + "\n");
});
