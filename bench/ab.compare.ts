// An A/B of two builds of the package in one persistent Chromium profile, alternating run
// by run so that both meet the same disk and the same load: the 1,000-row flush with a
// `send` answering at once, and 300 strict enqueues (per row, medians). For a change that
// should cost no speed (a build flag, a wasm-opt pass): build the other variant's package
// into a directory and
//   AB_PKG=/path/to/other/pkg GATE_PORT=8860 npx playwright test -c playwright.bench.config.ts
// (with AB_PKG set, the bench config runs this file alone; scripts/bench.sh never sets it).
// AB_FETCH=1 adds, per round and variant, a 1,000-row flush whose `send` POSTs each row to
// its gate (a create, classified with `classifyHttp`): the real-fetch figure's flush.
// A is this checkout's pkg/ (the gate of the config), B is AB_PKG, served by a second gate
// on AB_PORT (default GATE_PORT + 1). Prints figures; asserts only that the work was done.
import { expect, test, type BrowserContext, type Page } from "@playwright/test";
import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { launch } from "../tests/soak/browser";
import { call, fresh, median } from "./lib/setup";

const ROUNDS = Number(process.env.AB_ROUNDS ?? 7);

async function open(context: BrowserContext, origin: string, db: string, page?: Page): Promise<Page> {
  const p = page ?? (await context.newPage());
  await p.goto(`${origin}/bench.html?db=${db}&tab=tab-a`);
  await p.waitForFunction(() => (window as any).benchReady === true);
  return p;
}

test("A/B of two packages: instant flush and enqueue, alternating", async ({ baseURL }) => {
  const other = process.env.AB_PKG;
  if (!other) throw new Error("AB_PKG names the other package's directory");
  test.setTimeout(1_800_000);
  const port = Number(process.env.AB_PORT ?? Number(new URL(baseURL!).port) + 1);
  const gate = spawn("target/release/outbox-gate", ["--addr", `127.0.0.1:${port}`, "--db", ":memory:", "--test-endpoints", "--www", "www", "--pkg", other!], { stdio: "ignore" });
  const origins = { A: baseURL!, B: `http://127.0.0.1:${port}` };
  const context = await launch(mkdtempSync(join(tmpdir(), "outbox-ab-")), baseURL!);
  try {
    const pages = { A: await context.newPage(), B: await context.newPage() };
    for (let i = 0; ; i++) {
      try {
        await open(context, origins.B, fresh("probe"), pages.B);
        break;
      } catch (e) {
        if (i > 50) throw e;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    const flushMs: Record<"A" | "B", number[]> = { A: [], B: [] };
    const enqueueMs: Record<"A" | "B", number[]> = { A: [], B: [] };
    const fetchMs: Record<"A" | "B", number[]> = { A: [], B: [] };
    for (let round = 0; round < ROUNDS; round++) {
      for (const v of (round % 2 ? ["B", "A"] : ["A", "B"]) as Array<"A" | "B">) {
        // One flush of 1,000 fresh rows on a fresh database, per row.
        const flushOnce = async (send: "instant" | "fetch") => {
          await open(context, origins[v], fresh(`ab-${send}-${v}`), pages[v]);
          const owner = fresh("owner");
          await call(pages[v], "seed", owner, 1_000, send === "fetch" ? "create" : "update");
          const r = await call(pages[v], "flush", owner, send);
          await call(pages[v], "takeSent");
          expect(r.succeeded, `${v} sent every row`).toBe(1_000);
          return (r.end - r.start) / 1_000;
        };
        flushMs[v].push(await flushOnce("instant"));
        if (process.env.AB_FETCH) fetchMs[v].push(await flushOnce("fetch"));
        await open(context, origins[v], fresh(`ab-enqueue-${v}`), pages[v]);
        const e = await call(pages[v], "enqueuePaired", "me", 300);
        enqueueMs[v].push(e.enqueue / 300);
      }
    }
    const f = (xs: number[]) => median(xs).toFixed(3);
    console.log(`[ab] flush, 1,000 rows, send answering at once, ms/row (median of ${ROUNDS}): A ${f(flushMs.A)}, B ${f(flushMs.B)}, A ÷ B ×${(median(flushMs.A) / median(flushMs.B)).toFixed(3)}`);
    if (process.env.AB_FETCH) console.log(`[ab] flush, 1,000 rows, send POSTing to the gate, ms/row (median of ${ROUNDS}): A ${f(fetchMs.A)}, B ${f(fetchMs.B)}, A ÷ B ×${(median(fetchMs.A) / median(fetchMs.B)).toFixed(3)}; runs A ${fetchMs.A.map((x) => x.toFixed(2)).join(" ")}, B ${fetchMs.B.map((x) => x.toFixed(2)).join(" ")}`);
    console.log(`[ab] enqueue (strict), 300 rows, ms/row (median of ${ROUNDS}): A ${f(enqueueMs.A)}, B ${f(enqueueMs.B)}, A ÷ B ×${(median(enqueueMs.A) / median(enqueueMs.B)).toFixed(3)}`);
  } finally {
    await context.close();
    gate.kill();
  }
});
