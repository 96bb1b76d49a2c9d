// rows(owner), metrics(owner) and a flush of one owner's 100 rows, with 1,000 and with
// 100,000 rows of other owners in the same store: the cost should follow the owner's rows,
// not the store's. On disk (a persistent profile: the default context keeps IndexedDB in
// memory). Prints figures (median of 3); asserts only that the work was done.
import { test, expect, chromium, type Page } from "@playwright/test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import base from "../playwright.config";

const OWN = 100;
const OTHERS = (process.env.BENCH_OTHERS ?? "1000,100000").split(",").map(Number);

/** Writes `n` rows of other owners straight into the package's store, 10,000 per transaction. */
async function seedOthers(page: Page, db: string, n: number) {
  await page.evaluate(async ([db, n]) => {
    const idb: IDBDatabase = await new Promise((ok, err) => {
      const r = indexedDB.open(db);
      r.onsuccess = () => ok(r.result);
      r.onerror = () => err(r.error);
    });
    for (let start = 0; start < n; start += 10_000) {
      await new Promise<void>((ok, err) => {
        const tx = idb.transaction("outbox", "readwrite");
        const s = tx.objectStore("outbox");
        for (let i = start; i < Math.min(n, start + 10_000); i++) {
          s.put({ id: `other-${i}`, owner: `user-${i % 997}`, target: `workout:${i}`, kind: "update",
                  body: { weight: i, note: "x".repeat(200) }, savedAt: i, state: "queued" });
        }
        tx.oncomplete = () => ok();
        tx.onerror = () => err(tx.error);
      });
    }
    idb.close();
  }, [db, n] as const);
}

async function timed(page: Page, what: "rows" | "metrics" | "flush"): Promise<number> {
  return page.evaluate(async (what) => {
    const o = (window as any).outbox;
    if (what === "flush") {
      for (let i = 0; i < 100; i++) await o.enqueue({ owner: "me", kind: "update", target: `w:${i}`, body: { i } });
    }
    const t0 = performance.now();
    if (what === "rows") await o.rows("me");
    else if (what === "metrics") await o.metrics("me");
    else await o.flush({ owner: "me", send: () => ({ type: "success", receipt: {} }) });
    return performance.now() - t0;
  }, what);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

test("one owner's reads with 1k vs 100k rows of other owners (on disk)", async () => {
  const profile = mkdtempSync(join(tmpdir(), "outbox-bench-"));
  const context = await chromium.launchPersistentContext(profile, { ...base.use?.launchOptions, headless: true });
  try {
    const page = await context.newPage();
    const results = new Map<number, Record<string, number>>();
    for (const others of OTHERS) {
      const db = `owner-reads-${others}`;
      await page.goto(`${base.use?.baseURL}/bench.html?db=${db}&tab=t`);
      await page.waitForFunction(() => (window as any).benchReady === true);
      await seedOthers(page, db, others);
      await page.evaluate(async (n) => {
        const o = (window as any).outbox;
        for (let i = 0; i < n; i++) await o.enqueue({ owner: "me", kind: "update", target: `r:${i}`, body: { i } });
      }, OWN);
      expect((await page.evaluate(() => (window as any).outbox.rows("me"))).length).toBe(OWN);
      const figures: Record<string, number> = {};
      for (const what of ["rows", "metrics", "flush"] as const) {
        const runs = [];
        for (let k = 0; k < 3; k++) runs.push(await timed(page, what));
        figures[what] = median(runs);
      }
      results.set(others, figures);
    }
    const [small, large] = OTHERS;
    const lines = [`one owner's ${OWN} rows; other owners' rows: ${OTHERS.join(" vs ")} (median of 3, ms)`];
    for (const what of ["rows", "metrics", "flush"]) {
      const a = results.get(small)![what];
      const b = results.get(large)![what];
      lines.push(`  ${what.padEnd(8)} ${a.toFixed(1).padStart(8)} ${b.toFixed(1).padStart(8)}   ×${(b / a).toFixed(2)}`);
    }
    console.log("\n" + lines.join("\n") + "\n");
  } finally {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  }
});
