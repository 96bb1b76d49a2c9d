// Helpers for driving the demo app (and through it the package) from Playwright.
import { expect, type APIRequestContext, type BrowserContext, type Page, type Route } from "@playwright/test";
import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";

export const T0 = 1_700_000_000_000;
export const LEASE = 10_000;

declare global {
  interface Window {
    outboxDemo: any;
    __now: number;
    __flush?: Promise<any>;
  }
}

export function uid(): string {
  return Math.random().toString(36).slice(2, 9);
}

/** One "tab": a page of the shared context with its own clock, tab id and database name. */
export async function openTab(
  context: BrowserContext,
  o: { db: string; tab: string; users: string[]; clock?: number; lease?: number; turnWait?: number },
): Promise<Page> {
  const page = await context.newPage();
  const q = new URLSearchParams({
    db: o.db, tab: o.tab, users: o.users.join(","), clock: String(o.clock ?? T0),
    autoflush: "0", lease: String(o.lease ?? LEASE),
    ...(o.turnWait === undefined ? {} : { turnWait: String(o.turnWait) }),
  });
  await page.goto(`/?${q}`);
  await page.waitForFunction(() => window.outboxDemo?.ready === true);
  return page;
}

export const rows = (page: Page, owner?: string): Promise<any[]> =>
  page.evaluate((o) => window.outboxDemo.outbox.rows(o ?? window.outboxDemo.owner()), owner);

export const enqueue = (page: Page, op: Record<string, unknown>): Promise<any> =>
  page.evaluate((op) => window.outboxDemo.outbox.enqueue({ owner: window.outboxDemo.owner(), ...op }), op);

export const flush = (page: Page): Promise<any> => page.evaluate(() => window.outboxDemo.flushNow());

/** Starts a flush without waiting for it (its sends may be held by a route). */
export const startFlush = (page: Page): Promise<void> =>
  page.evaluate(() => { window.__flush = window.outboxDemo.flushNow(); });

export const flushResult = (page: Page): Promise<any> => page.evaluate(() => window.__flush);

export const setClock = (page: Page, t: number): Promise<number> => page.evaluate((t) => (window.__now = t), t);

/** Every effect the server applied, `{opId, actor, kind, target, count}`. */
export async function effects(request: APIRequestContext, actor?: string): Promise<any[]> {
  const all = await (await request.get("/api/effects")).json();
  return actor ? all.filter((e: any) => e.actor === actor) : all;
}

/** Applied-effect count of one operation id. */
export async function timesApplied(request: APIRequestContext, opId: string): Promise<number> {
  return (await effects(request)).filter((e) => e.opId === opId).reduce((n, e) => n + e.count, 0);
}

/** Holds the next `times` requests to the records API of `page` until the test releases them. */
export async function holdRecords(page: Page, times = 1): Promise<Route[]> {
  const held: Route[] = [];
  await page.route("**/api/records/**", (route) => { held.push(route); }, { times });
  return held;
}

export async function waitHeld(held: Route[], n = 1): Promise<Route> {
  await expect.poll(() => held.length).toBeGreaterThanOrEqual(n);
  return held[n - 1];
}

/** A server record of `user` created through the page's own outbox, returned with its id. */
export async function serverRecord(page: Page, body: Record<string, unknown> = { entity: "workout", weight: 1 }) {
  const row = await enqueue(page, { kind: "create", body });
  const report = await flush(page);
  const receipt = report.receipts.find((r: any) => r.id === row.id);
  expect(receipt, "the create was answered").toBeTruthy();
  return receipt.receipt as { serverId: string; revision: number };
}

/** Writes raw values into the page's outbox store `db` in one transaction, as an older
 * writer or another tab would. */
export async function putRaw(page: Page, db: string, values: object[]) {
  await page.evaluate(async ({ db, values }) => {
    await new Promise<void>((ok, err) => {
      const r = indexedDB.open(db);
      r.onsuccess = () => {
        const tx = r.result.transaction("outbox", "readwrite");
        for (const v of values) tx.objectStore("outbox").put(v);
        tx.oncomplete = () => { r.result.close(); ok(); };
        tx.onerror = () => err(tx.error);
      };
      r.onerror = () => err(r.error);
    });
  }, { db, values });
}

/** A free loopback port. */
export async function freePort(): Promise<number> {
  return new Promise((ok) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => ok(port));
    });
  });
}

/** Starts the gate binary with `args` on `port` and waits until `path` answers (5 s at most). */
export async function startGate(port: number, args: string[], path = "/"): Promise<ChildProcess> {
  const gate = spawn("target/release/outbox-gate", ["--addr", `127.0.0.1:${port}`, ...args], { stdio: "ignore" });
  for (let i = 0; i < 100; i++) {
    try {
      await fetch(`http://127.0.0.1:${port}${path}`);
      return gate;
    } catch {
      await new Promise((ok) => setTimeout(ok, 50));
    }
  }
  gate.kill("SIGKILL");
  throw new Error(`the gate on port ${port} did not start`);
}
