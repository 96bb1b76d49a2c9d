// The 4-pages figure run by run: 4 pages draining one queue and 1 page draining it beside 3
// idle ones, taking turns (four idle, idle four, …) in one persistent profile, each pair's
// ratio printed. Run it with
//   npx playwright test -c playwright.timeline.config.ts pages
// (PAGES_N rows, default 2,000; PAGES_RUNS pairs, default 12). Not part of scripts/bench.sh:
// it shows how far the figure moves by chance from one pair to the next.
import { test } from "@playwright/test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { launch } from "../tests/soak/browser";
import { startPeerOrigin } from "../tests/soak/peer";
import { pagesOnce } from "./lib/outbox";
import { median } from "./lib/setup";

test("4 pages beside 1 page with 3 idle, pair by pair", async ({ baseURL }) => {
  test.setTimeout(3_600_000);
  const n = Number(process.env.PAGES_N ?? 2_000);
  const runs = Number(process.env.PAGES_RUNS ?? 12);
  const origin = await startPeerOrigin(baseURL!, test.info().outputPath("sw"), Number(process.env.PEER_PORT ?? 0));
  const profile = mkdtempSync(join(tmpdir(), "outbox-pages-"));
  const context = await launch(profile, origin.url);
  const [four, idle]: number[][] = [[], []];
  try {
    const page = await context.newPage();
    for (let i = 0; i < runs; i++) {
      const take = async (idleOne: boolean) => (idleOne ? idle : four).push((await pagesOnce(context, page, 4, n, idleOne)).ms);
      if (i % 2 === 0) await take(false), await take(true);
      else await take(true), await take(false);
      console.log(`[pages] pair ${i + 1}: 4 pages ${four[i].toFixed(0)} ms, 1 beside 3 idle ${idle[i].toFixed(0)} ms, ×${(idle[i] / four[i]).toFixed(3)}`);
    }
  } finally {
    await context.close();
    await origin.close();
    rmSync(profile, { recursive: true, force: true });
  }
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  const pairs = four.map((f, i) => idle[i] / f);
  console.log(`[pages] ${runs} pairs of ${n} rows: median ÷ median ×${(median(idle) / median(four)).toFixed(3)}, ` +
    `median of the pairs' ratios ×${median(pairs).toFixed(3)}, sum ÷ sum ×${(sum(idle) / sum(four)).toFixed(3)}; ` +
    `pairs from ×${Math.min(...pairs).toFixed(3)} to ×${Math.max(...pairs).toFixed(3)}`);
});
