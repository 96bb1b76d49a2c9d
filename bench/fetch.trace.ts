// The fetch figure (POSTs alone ÷ a flush with a real fetch, in turns) in a fresh profile,
// then again after the profile's backing store took FETCH_DIRTY rows written and deleted by
// instant flushes (what the full benchmark's earlier sections leave behind), each pair's
// ratio printed. Run it with
//   npx playwright test -c playwright.timeline.config.ts fetch
// (FETCH_N rows, default 1,000; FETCH_RUNS turns, default 5; FETCH_DIRTY rows, default
// 60,000). Not part of scripts/bench.sh: it tells whether what ran before the fetch figure
// in one profile moves it.
import { test } from "@playwright/test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { launch } from "../tests/soak/browser";
import { startPeerOrigin } from "../tests/soak/peer";
import { flushOnce, postsOnce } from "./lib/outbox";
import { inTurns } from "./lib/setup";

test("the fetch figure, in a fresh profile and after a dirty one", async ({ baseURL }) => {
  test.setTimeout(3_600_000);
  const n = Number(process.env.FETCH_N ?? 1_000);
  const runs = Number(process.env.FETCH_RUNS ?? 5);
  const dirty = Number(process.env.FETCH_DIRTY ?? 60_000);
  const origin = await startPeerOrigin(baseURL!, test.info().outputPath("sw"), Number(process.env.PEER_PORT ?? 0));
  const profile = mkdtempSync(join(tmpdir(), "outbox-fetch-"));
  const context = await launch(profile, origin.url);
  try {
    const page = await context.newPage();
    const figure = async (label: string) => {
      const [alone, flush] = await inTurns(runs, () => postsOnce(context, page, n), () => flushOnce(context, page, n, "fetch"));
      const pairs = alone.runs.map((a, i) => (a / flush.runs[i]).toFixed(3)).join(", ");
      console.log(`[fetch] ${label}: POSTs alone ${(alone.ms / n).toFixed(3)} ms/row, flush ${(flush.ms / n).toFixed(3)} ms/row, ` +
        `×${(alone.ms / flush.ms).toFixed(3)} (turns: ${pairs}; flush runs ${flush.runs.map((m) => m.toFixed(0)).join(", ")} ms)`);
    };
    await figure("fresh profile");
    for (let done = 0; done < dirty; done += 10_000) await flushOnce(context, page, Math.min(10_000, dirty - done), "instant");
    await figure(`after ${dirty.toLocaleString("en-US")} rows written and deleted`);
    await figure("again, right after");
  } finally {
    await context.close();
    await origin.close();
    rmSync(profile, { recursive: true, force: true });
  }
});
