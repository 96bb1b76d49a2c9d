// Where the machine's CPU goes during a flush: the CPU time of every process (Chromium's
// renderer, browser and network service, the gate, node's origin proxy) per row, read from
// /proc before and after each of: the page's POSTs alone (16 in flight), a flush POSTing
// each row ("flush"), a flush whose send answers at once ("instant") and one whose send
// answers after 20–40 ms without any network ("delayed": answers that trickle in). Run it
// with
//   WHAT=posts,flush,instant,delayed npx playwright test -c playwright.timeline.config.ts cpu
// (TIMELINE_N rows, default 1,000; TIMELINE_RUNS, default 2; TIMELINE_CPU=1 adds the
// renderer's profile, self time per function). Linux only (it reads /proc). Not part of
// scripts/bench.sh: it explains the real-fetch figure (BENCHMARKS.md), it does not take it.
import { test } from "@playwright/test";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { launch } from "../tests/soak/browser";
import { startPeerOrigin } from "../tests/soak/peer";
import { startProfile, selfTimes } from "./lib/profile";
import { benchPage, call, fresh } from "./lib/setup";

function snapshot(): Map<string, number> {
  const m = new Map<string, number>();
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, "utf8");
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      const t = Number(f[11]) + Number(f[12]);
      const cmd = readFileSync(`/proc/${d}/cmdline`, "utf8").replace(/\0/g, " ");
      let g = "other";
      if (cmd.includes("outbox-gate")) g = "gate";
      else if (cmd.includes("chrom")) {
        const ty = /--type=(\S+)/.exec(cmd)?.[1] ?? "browser";
        const sub = /--utility-sub-type=(\S+)/.exec(cmd)?.[1] ?? "";
        g = `chromium ${ty} ${sub}`;
      } else if (cmd.includes("node")) g = "node";
      m.set(`${g}|${d}`, t);
    } catch {}
  }
  return m;
}
function total(): [number, number] {
  const l = readFileSync("/proc/stat", "utf8").split("\n")[0].split(/\s+/).slice(1).map(Number);
  const idle = l[3] + l[4];
  return [l.reduce((a, b) => a + b, 0) - idle, idle];
}
function diff(a: Map<string, number>, b: Map<string, number>, n: number, wall: number, t0: [number, number], t1: [number, number]) {
  const g = new Map<string, number>();
  for (const [k, v] of b) {
    const grp = k.split("|")[0];
    g.set(grp, (g.get(grp) ?? 0) + (v - (a.get(k) ?? 0)));
  }
  const busy = t1[0] - t0[0], idle = t1[1] - t0[1];
  return `wall ${wall.toFixed(0)} ms (${(wall / n).toFixed(2)} ms/row); machine busy ${(busy * 10 / n).toFixed(2)} ms/row, idle ${(idle * 10 / n).toFixed(2)} ms/row\n` +
    [...g].filter(([, v]) => v > 0).sort((x, y) => y[1] - x[1]).map(([k, v]) => `  ${(v * 10 / n).toFixed(2).padStart(6)} ms/row  ${k}`).join("\n");
}

test("cpu per process", async ({ baseURL }) => {
  test.setTimeout(600_000);
  const n = Number(process.env.TIMELINE_N ?? 1000);
  const origin = await startPeerOrigin(baseURL!, test.info().outputPath("sw"), 0);
  const profile = mkdtempSync(join(tmpdir(), "outbox-cpu-"));
  const context = await launch(profile, origin.url);
  const out: string[] = [];
  try {
    const page = await context.newPage();
    for (let run = 0; run < Number(process.env.TIMELINE_RUNS ?? 2); run++) {
      for (const what of (process.env.WHAT ?? "posts,flush,instant,delayed").split(",")) {
        await benchPage(context, fresh(`cpu-${what}`), "tab-a", page);
        const owner = fresh("owner");
        if (what !== "posts") await call(page, "seed", owner, n, what === "flush" ? "create" : "update");
        await new Promise((r) => setTimeout(r, 300));
        const profiler = process.env.TIMELINE_CPU ? await startProfile(context, page) : null;
        const a = snapshot(), ta = total(), w0 = Date.now();
        if (what === "posts") await call(page, "posts", owner, n, 16);
        else await call(page, "flush", owner, what === "flush" ? "fetch" : what);
        const w = Date.now() - w0, b = snapshot(), tb = total();
        out.push(`== ${what} run ${run}: ${diff(a, b, n, w, ta, tb)}`);
        if (profiler) out.push(selfTimes(await profiler.stop(), 12));
        await call(page, "takeSent");
      }
    }
  } finally {
    await context.close();
    await origin.close();
    rmSync(profile, { recursive: true, force: true });
  }
  console.log("\n" + out.join("\n"));
});
