// The floors: what IndexedDB itself costs per row on the package's own schema (store
// `outbox`, index `byOwnerTarget`), with no library in between. Floor A: one readwrite
// transaction per row (index read + put). Floor B: two such transactions per row (a naive
// claim, then a naive ACK). The raw strict transaction is floor A with `durability: "strict"`,
// what an enqueue must pay at least.
import type { BrowserContext, Page } from "@playwright/test";
import { benchPage, call, fresh, measure } from "./setup";

export async function floorA(context: BrowserContext, page: Page, n: number, runs: number, durability = "default") {
  return measure(runs, async () => {
    await benchPage(context, fresh("floor-a"), "tab-a", page);
    return call<number>(page, "floorA", "floor", n, durability);
  });
}

/** One run of floor B (ms), on a fresh database. */
export async function floorBOnce(context: BrowserContext, page: Page, n: number) {
  await benchPage(context, fresh("floor-b"), "tab-a", page);
  return call<number>(page, "floorB", "floor", n);
}
