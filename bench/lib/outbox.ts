// The package's own figures: enqueue, flush with a `send` answering at once, several pages
// draining one queue (every send counted, so duplicates show), and flush with a real
// `fetch` to the gate beside the same POSTs sent by the page alone.
import { expect, type BrowserContext, type Page } from "@playwright/test";
import { benchPage, call, fresh, measure, median } from "./setup";

/**
 * `n` enqueues taking turns, row by row, with a raw strict transaction and one ending in
 * `commit()` (www/bench.js `enqueuePaired`), `runs` times in fresh databases: the medians.
 * Taking turns puts the three through the same disk state; measured one after the other,
 * a strict figure moves by ±15 % between runs with the disk alone.
 */
export async function enqueue(context: BrowserContext, page: Page, n: number, runs: number) {
  const all: { raw: number; rawCommit: number; enqueue: number }[] = [];
  for (let i = 0; i < runs; i++) {
    await benchPage(context, fresh("enqueue"), "tab-a", page);
    all.push(await call(page, "enqueuePaired", "me", n));
  }
  const of = (k: "raw" | "rawCommit" | "enqueue") => ({ ms: median(all.map((r) => r[k])), runs: all.map((r) => r[k]) });
  return { raw: of("raw"), rawCommit: of("rawCommit"), enqueue: of("enqueue") };
}

/** One flush of `n` queued rows in one page. `send`: "instant" or "fetch" (creates to the gate). */
export async function flush(context: BrowserContext, page: Page, n: number, runs: number, send: "instant" | "fetch") {
  return measure(runs, () => flushOnce(context, page, n, send));
}

/** One such flush (ms), on a fresh database. */
export async function flushOnce(context: BrowserContext, page: Page, n: number, send: "instant" | "fetch") {
  await benchPage(context, fresh(`flush-${send}`), "tab-a", page);
  const owner = fresh("owner");
  await call(page, "seed", owner, n, send === "fetch" ? "create" : "update");
  const r = await call(page, "flush", owner, send);
  await call(page, "takeSent");
  expect(r.succeeded, `flush (${send}) sent every row`).toBe(n);
  return r.end - r.start;
}

/**
 * One run of `k` pages flushing one queue of `n` rows at once: the combined time (ms), and
 * sends beyond one per row. `idle`: the other pages are open on the database but only the
 * first flushes — what having them open costs, whatever they do.
 */
export async function pagesOnce(context: BrowserContext, page: Page, k: number, n: number, idle = false) {
  const db = fresh(`pages-${k}`);
  const owner = fresh("owner");
  await benchPage(context, db, "tab-0", page);
  await call(page, "seed", owner, n);
  const all = [page];
  for (let i = 1; i < k; i++) all.push(await benchPage(context, db, `tab-${i}`));
  const reports = await Promise.all((idle ? [page] : all).map((p) => call(p, "flush", owner, "instant")));
  const sent: string[] = (await Promise.all(all.map((p) => call<string[]>(p, "takeSent")))).flat();
  const left = await call<number>(page, "left", owner);
  for (const p of all.slice(1)) await p.close();
  expect(left, `${k} pages drained the queue`).toBe(0);
  const ms = Math.max(...reports.map((r) => r.end)) - Math.min(...reports.map((r) => r.start));
  return { ms, duplicates: sent.length - new Set(sent).size, stale: reports.reduce((s, r) => s + r.stale, 0) };
}

/**
 * One run of `k` pages at once, each flushing its own owner's `n / k` rows of one database:
 * no row is shared, so nothing collides — what `k` pages cost beside one page when IndexedDB
 * runs one readwrite transaction on the store at a time (the floor of the `pages` figure).
 */
async function ownPagesOnce(context: BrowserContext, page: Page, k: number, n: number) {
  const db = fresh(`own-pages-${k}`);
  await benchPage(context, db, "tab-0", page);
  const owners = Array.from({ length: k }, () => fresh("owner"));
  for (const o of owners) await call(page, "seed", o, n / k);
  const all = [page];
  for (let i = 1; i < k; i++) all.push(await benchPage(context, db, `tab-${i}`));
  const reports = await Promise.all(all.map((p, i) => call(p, "flush", owners[i], "instant")));
  for (const p of all.slice(1)) await p.close();
  reports.forEach((r, i) => expect(r.succeeded, `page ${i} sent its owner's rows`).toBe(n / k));
  return Math.max(...reports.map((r) => r.end)) - Math.min(...reports.map((r) => r.start));
}

type PagesFigure = { ms: number; runs: number[]; duplicates: number; stale: number };

/**
 * 1, 2 and 4 pages draining one queue of `n` rows, 4 pages each draining its own owner's
 * share, and 1 page draining it with 3 more open and idle, measured in turns — one run of
 * each, `runs` times, the order reversed every other time — so that all five go through the
 * same state of the profile's disk: measured one after the other, the later figures paid for
 * the storage the earlier ones left (the origin's databases share one backing store), and
 * a figure always measured last would always pay the most. `runs` should be even: with a
 * steady drift, an odd count's median is a run of the forward order, and the bias is back.
 */
export async function pagesInTurns(context: BrowserContext, page: Page, n: number, runs: number) {
  const acc = new Map<string, { runs: number[]; duplicates: number; stale: number }>();
  const add = (key: string, ms: number, duplicates = 0, stale = 0) => {
    const a = acc.get(key) ?? { runs: [], duplicates: 0, stale: 0 };
    a.runs.push(ms);
    a.duplicates += duplicates;
    a.stale += stale;
    acc.set(key, a);
  };
  const once: (() => Promise<void>)[] = [
    ...[1, 2, 4].map((k) => async () => {
      const r = await pagesOnce(context, page, k, n);
      add(String(k), r.ms, r.duplicates, r.stale);
    }),
    async () => add("own4", await ownPagesOnce(context, page, 4, n)),
    async () => add("idle4", (await pagesOnce(context, page, 4, n, true)).ms),
  ];
  for (let i = 0; i < runs; i++) {
    for (const run of i % 2 === 0 ? once : [...once].reverse()) await run();
  }
  const figure = (key: string): PagesFigure => {
    const a = acc.get(key)!;
    return { ms: median(a.runs), ...a };
  };
  return { one: figure("1"), two: figure("2"), four: figure("4"), own4: figure("own4"), idle4: figure("idle4") };
}

/** The network alone: `n` POSTs to the gate from the page, `inFlight` at a time, no IndexedDB. */
/** One run of the POSTs alone (ms). */
export async function postsOnce(context: BrowserContext, page: Page, n: number, inFlight = 16) {
  await benchPage(context, fresh("posts"), "tab-a", page);
  const r = await call(page, "posts", fresh("owner"), n, inFlight);
  expect(r.ok, "every POST succeeded").toBe(n);
  return r.ms;
}
