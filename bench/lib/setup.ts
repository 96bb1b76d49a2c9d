// What the benchmark runs at (full or --quick), and the small helpers every section uses.
import type { BrowserContext, Page } from "@playwright/test";

export const QUICK = process.env.BENCH_QUICK === "1";

/** Sizes of the figures. Full: issue 12's; quick: small enough for CI (~2 minutes). */
export const SIZES = QUICK
  ? { small: 200, large: 1_000, pages: 400, fetchSmall: 200, fetchLarge: 500, others: [1_000, 10_000], own: 100, runs: 1, runsLarge: 1, turnsLarge: 1, pagesRuns: 1 }
  : { small: 1_000, large: 10_000, pages: 2_000, fetchSmall: 1_000, fetchLarge: 5_000, others: [1_000, 100_000], own: 100, runs: 5, runsLarge: 1, turnsLarge: 3, pagesRuns: 10 };

let serial = 0;
/** A name no earlier measurement used (each measurement gets a fresh database or owner). */
export const fresh = (what: string) => `${what}-${++serial}-${Math.random().toString(36).slice(2, 7)}`;

/** Loads the bench page (www/bench.html) on `db` as tab `tab`; `page` is reused if given. */
export async function benchPage(context: BrowserContext, db: string, tab = "tab-a", page?: Page): Promise<Page> {
  const p = page ?? (await context.newPage());
  const c = process.env.BENCH_CONCURRENCY;
  await p.goto(`/bench.html?db=${db}&tab=${tab}${c ? `&concurrency=${c}` : ""}`);
  await p.waitForFunction(() => (window as any).benchReady === true);
  return p;
}

/** Calls `window.bench[fn](...args)` in the page (www/bench.js). */
export function call<T = any>(page: Page, fn: string, ...args: unknown[]): Promise<T> {
  return page.evaluate(([fn, args]) => (window as any).bench[fn as string](...(args as unknown[])), [fn, args] as const);
}

/** The median; of an even count, the mean of the two middle runs (not the slower one). */
export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** Runs `once` `runs` times; the median and every run (ms). */
export async function measure(runs: number, once: () => Promise<number>): Promise<{ ms: number; runs: number[] }> {
  const all: number[] = [];
  for (let i = 0; i < runs; i++) all.push(await once());
  return { ms: median(all), runs: all };
}

/**
 * `a` and `b`, `runs` times each, taking turns (a b, b a, a b, …): the medians and every run
 * of each. An origin's databases share one backing store, so a figure measured after another
 * pays for the storage the other left; in turns, each pays as much as the figure it is
 * compared with (as the pages' figures, bench/lib/outbox.ts `pagesInTurns`).
 */
export async function inTurns(runs: number, a: () => Promise<number>, b: () => Promise<number>) {
  const [ra, rb]: number[][] = [[], []];
  for (let i = 0; i < runs; i++) {
    if (i % 2 === 0) ra.push(await a()), rb.push(await b());
    else rb.push(await b()), ra.push(await a());
  }
  return [{ ms: median(ra), runs: ra }, { ms: median(rb), runs: rb }] as const;
}
