// Where the time of one flush goes: every IndexedDB transaction (its mode, requests, start
// and end) and every fetch of the page, timestamped in the page by wrapping the browser's
// own APIs from an init script (nothing in the package). Run it with
//   npx playwright test -c playwright.timeline.config.ts timeline
// (TIMELINE_N rows, default 1,000; TIMELINE_SEND "instant", "fetch", "delayed" (answers after
// 20–40 ms, no network) or several, comma-separated; TIMELINE_RUNS
// runs of each, default 2; TIMELINE_CPU=1 adds the renderer's CPU profile, self time per
// function, and writes it as .cpuprofile beside the test's output; build the package with
// OUTBOX_KEEP_NAMES=1 scripts/build.sh first for the wasm functions' names). Not part of
// scripts/bench.sh: it explains the figures, it does not take them.
import { test } from "@playwright/test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { launch } from "../tests/soak/browser";
import { startPeerOrigin } from "../tests/soak/peer";
import { startProfile, selfTimes } from "./lib/profile";
import { benchPage, call, fresh } from "./lib/setup";

/** Wraps IDBDatabase.transaction, the store/index requests and fetch: window.__tl. */
function instrument() {
  const tl: any = { tx: [], fetch: [] };
  (window as any).__tl = tl;
  const now = () => performance.now();
  const origTx = IDBDatabase.prototype.transaction;
  IDBDatabase.prototype.transaction = function (this: IDBDatabase, ...args: any[]) {
    const tx = (origTx as any).apply(this, args);
    const e = { mode: args[1] ?? "readonly", t0: now(), t1: 0, reqs: { get: 0, getAll: 0, getAllKeys: 0, put: 0, delete: 0, openCursor: 0 } as Record<string, number>, firstReq: 0, lastReq: 0 };
    (tx as any).__e = e;
    tl.tx.push(e);
    const end = () => { e.t1 = now(); };
    tx.addEventListener("complete", end);
    tx.addEventListener("abort", end);
    return tx;
  } as any;
  for (const proto of [IDBObjectStore.prototype, IDBIndex.prototype] as any[]) {
    for (const m of ["get", "getAll", "getAllKeys", "put", "delete", "openCursor"]) {
      const orig = proto[m];
      if (!orig) continue;
      proto[m] = function (this: any, ...args: any[]) {
        const store = this instanceof IDBIndex ? this.objectStore : this;
        const e = store.transaction.__e;
        if (e) {
          e.reqs[m]++;
          const t = now();
          if (!e.firstReq) e.firstReq = t;
          e.lastReq = t;
        }
        return orig.apply(this, args);
      };
    }
  }
  const origFetch = window.fetch;
  window.fetch = function (...args: any[]) {
    const e = { t0: now(), t1: 0 };
    tl.fetch.push(e);
    return (origFetch as any).apply(this, args).then((r: Response) => {
      // The answer's body is read by the caller; count the answer's arrival.
      e.t1 = now();
      return r;
    });
  } as any;
  tl.reset = () => { tl.tx.length = 0; tl.fetch.length = 0; };
}

function summarize(label: string, start: number, end: number, tl: { tx: any[]; fetch: any[] }) {
  const tx = tl.tx.filter((t) => t.t0 >= start - 1);
  const rw = tx.filter((t) => t.mode === "readwrite");
  const ro = tx.filter((t) => t.mode !== "readwrite");
  const dur = (xs: any[]) => xs.reduce((s, t) => s + ((t.t1 || t.t0) - t.t0), 0);
  const byShape = new Map<string, any>();
  for (const t of tx) {
    const shape = `${t.mode} ${Object.entries(t.reqs).filter(([, v]) => v).map(([k, v]) => `${k}×${v}`).join(" ")}`;
    const s = byShape.get(shape) ?? { n: 0, ms: 0, open: 0, issue: 0, commit: 0 };
    s.n++;
    s.ms += (t.t1 || t.t0) - t.t0;
    s.open += (t.firstReq || t.t0) - t.t0;
    s.issue += (t.lastReq || t.t0) - (t.firstReq || t.t0);
    s.commit += (t.t1 || t.t0) - (t.lastReq || t.t0);
    byShape.set(shape, s);
  }
  // Time covered by at least one readwrite transaction, and by none.
  const ivs = rw.map((t) => [t.t0, t.t1]).sort((a, b) => a[0] - b[0]);
  let covered = 0, curS = -1, curE = -1;
  for (const [s, e] of ivs) {
    if (s > curE) { if (curE > curS) covered += curE - curS; curS = s; curE = e; } else curE = Math.max(curE, e);
  }
  if (curE > curS) covered += curE - curS;
  const total = end - start;
  const lines = [
    `== ${label}: ${total.toFixed(0)} ms`,
    `transactions: ${rw.length} readwrite (${dur(rw).toFixed(0)} ms summed), ${ro.length} readonly (${dur(ro).toFixed(0)} ms)`,
    `readwrite transactions cover ${covered.toFixed(0)} ms (${((100 * covered) / total).toFixed(0)} %); none runs for ${(total - covered).toFixed(0)} ms`,
    ...[...byShape.entries()].sort((a, b) => b[1].ms - a[1].ms).slice(0, 14)
      .map(([k, v]) => `  ${String(v.n).padStart(5)} × ${k}: ${v.ms.toFixed(0)} ms, ${(v.ms / v.n).toFixed(2)} ms each (to 1st request ${(v.open / v.n).toFixed(2)}, 1st→last request ${(v.issue / v.n).toFixed(2)}, last request→complete ${(v.commit / v.n).toFixed(2)})`),
  ];
  // The readwrite transactions by tenth of the flush (in order): a cost that grows or
  // shrinks with the queue's size shows here.
  if (rw.length >= 20) {
    const tenths: string[] = [];
    for (let i = 0; i < 10; i++) {
      const part = rw.slice(Math.floor((i * rw.length) / 10), Math.floor(((i + 1) * rw.length) / 10));
      tenths.push((dur(part) / part.length).toFixed(1));
    }
    lines.push(`readwrite ms each, by tenth of the flush: ${tenths.join(" ")}`);
  }
  // Sends in flight over time (fetch), sampled every ms.
  const f = tl.fetch.filter((x) => x.t0 >= start - 1);
  if (f.length) {
    const hist = new Map<number, number>();
    for (let t = start; t < end; t += 1) {
      const k = f.filter((x) => x.t0 <= t && (x.t1 || end) > t).length;
      hist.set(k, (hist.get(k) ?? 0) + 1);
    }
    const mean = [...hist].reduce((s, [k, v]) => s + k * v, 0) / total;
    const rt = f.filter((x) => x.t1).map((x) => x.t1 - x.t0).sort((a, b) => a - b);
    lines.push(`fetches: ${f.length}, mean in flight ${mean.toFixed(1)}; round trip median ${rt[rt.length >> 1].toFixed(1)} ms`);
    lines.push(`  in flight: ${[...hist].sort((a, b) => a[0] - b[0]).map(([k, v]) => `${k}:${((100 * v) / total).toFixed(0)}%`).join(" ")}`);
  }
  // The first transactions, to see the pipeline's shape.
  const shown = (t: any) => `  ${(t.t0 - start).toFixed(1).padStart(7)}–${(t.t1 - start).toFixed(1).padStart(7)} ${t.mode === "readwrite" ? "rw" : "ro"} ${Object.entries(t.reqs).filter(([, v]) => v).map(([k, v]) => `${k}×${v}`).join(" ")}`;
  lines.push("first transactions (ms from the flush's start):", ...tx.slice(0, 40).map(shown));
  // And the last ones, to see how a flush ends (its last reads of the queue).
  if (tx.length > 40) lines.push("last transactions:", ...tx.slice(Math.max(40, tx.length - 12)).map(shown));
  return lines.join("\n");
}

test("timeline of one flush", async ({ baseURL }) => {
  test.setTimeout(600_000);
  const n = Number(process.env.TIMELINE_N ?? 1000);
  const sends = (process.env.TIMELINE_SEND ?? "instant,fetch").split(",");
  const origin = await startPeerOrigin(baseURL!, test.info().outputPath("sw"), 0);
  const profile = mkdtempSync(join(tmpdir(), "outbox-timeline-"));
  const context = await launch(profile, origin.url);
  await context.addInitScript(instrument);
  const out: string[] = [];
  try {
    const page = await context.newPage();
    for (const send of sends) {
      for (let run = 0; run < Number(process.env.TIMELINE_RUNS ?? 2); run++) {
        await benchPage(context, fresh(`tl-${send}`), "tab-a", page);
        const owner = fresh("owner");
        await call(page, "seed", owner, n, send === "fetch" ? "create" : "update");
        await page.evaluate(() => (window as any).__tl.reset());
        const profiler = process.env.TIMELINE_CPU ? await startProfile(context, page) : null;
        const r = await call(page, "flush", owner, send);
        const cpu = profiler ? await profiler.stop() : null;
        const tl = await page.evaluate(() => { const t = (window as any).__tl; return { tx: t.tx, fetch: t.fetch }; });
        const t0 = r.start - (await page.evaluate(() => performance.timeOrigin));
        const t1 = r.end - (await page.evaluate(() => performance.timeOrigin));
        out.push(summarize(`${send} N=${n} run ${run} (${((t1 - t0) / n).toFixed(3)} ms/row)`, t0, t1, tl));
        if (cpu) {
          out.push("cpu self time (ms):\n" + selfTimes(cpu, 40));
          writeFileSync(test.info().outputPath(`${send}-${run}.cpuprofile`), JSON.stringify(cpu));
        }
        await call(page, "takeSent");
      }
    }
  } finally {
    await context.close();
    await origin.close();
    rmSync(profile, { recursive: true, force: true });
  }
  console.log("\n" + out.join("\n\n"));
});
