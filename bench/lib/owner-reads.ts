// One owner's reads beside many other owners' rows: rows(owner), metrics(owner),
// undecodable() (a question about every owner: it reads the whole store) and a flush of the
// owner's rows, with 1,000 and with 100,000 rows of 997 other owners in the same store.
import { expect, type BrowserContext, type Page } from "@playwright/test";
import { benchPage, call, fresh, measure } from "./setup";

export const READS = ["rows", "metrics", "undecodable", "flush"] as const;

export async function ownerReads(context: BrowserContext, page: Page, others: number, own: number, runs: number) {
  await benchPage(context, fresh(`owner-reads-${others}`), "tab-a", page);
  await call(page, "seedOthers", others);
  await call(page, "seed", "me", own);
  expect(await call<number>(page, "left", "me")).toBe(own);
  const out: Record<string, { ms: number; runs: number[] }> = {};
  for (const what of READS) {
    out[what] = await measure(runs, async () => {
      if (what !== "flush") return call<number>(page, "read", what, "me");
      const owner = fresh("me");
      await call(page, "seed", owner, own);
      const r = await call(page, "flush", owner, "instant");
      await call(page, "takeSent");
      expect(r.succeeded).toBe(own);
      return r.end - r.start;
    });
  }
  return out;
}

/**
 * `purgeOwner` of an owner with `own` queued rows (an owner-wide command: one transaction
 * over the owner's range), on a fresh database. Per row it should not grow with `own`.
 */
export async function purgeOwner(context: BrowserContext, page: Page, own: number, runs: number) {
  await benchPage(context, fresh(`purge-${own}`), "tab-a", page);
  return measure(runs, async () => {
    const owner = fresh("leaving");
    await call(page, "seed", owner, own);
    const r = await call<{ ms: number; n: number }>(page, "purge", owner);
    expect(r.n).toBe(own);
    expect(await call<number>(page, "left", owner)).toBe(0);
    return r.ms;
  });
}
