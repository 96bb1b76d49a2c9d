// The seeded soak: several tabs of one origin in a persistent profile, each editing records
// of two accounts while its outbox flushes; faults drawn from the seed on the wire; tabs
// closed mid-send; the browser SIGKILLed mid-flush and relaunched on the same profile. Then
// faults off, the queues drain, and one summary line states what happened, with the zeros
// asserted. See scripts/soak.sh and docs/guarantees.md.
//
//   SOAK_OPS   operations to enqueue (default 1000)       SOAK_SEED  replays a schedule
//   SOAK_PAGES tabs (default 4)
//
// A seed fixes every draw: which edit each tab makes, the values, which request gets which
// fault, when tabs are closed and the browser is killed. Real browser and network timing
// still decide the interleaving, so a replay runs the same schedule, not the same trace.
import { test, expect, type BrowserContext, type Page, type Route } from "@playwright/test";
import { mkdirSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { launch, killBrowser } from "./browser";
import { events } from "./events";
import { Model, rng } from "./model";

const OPS = Number(process.env.SOAK_OPS ?? 1000);
const PAGES = Math.max(4, Number(process.env.SOAK_PAGES ?? 4));
const SEED = Number(process.env.SOAK_SEED ?? Math.floor(Math.random() * 2 ** 31));
const LEASE = 2_500;
/** Skews stay within ±SKEW: two tabs differ by less than the lease minus a slow send. */
const SKEW = 500;
const PAGE_DIR = resolve("tests/soak/page");

// The title must not carry a seed drawn here: Playwright loads this file in its runner and
// again in the worker, and a title that differs between the two is "not found".
test(`soak: ${OPS} operations, ${PAGES} tabs`, async ({ request, baseURL }) => {
  test.setTimeout(Math.max(300_000, OPS * 300));
  console.log(`[soak] seed ${SEED} (replay: SOAK_SEED=${SEED} SOAK_OPS=${OPS} scripts/soak.sh)`);
  const started = Date.now();
  // Under the test's output folder: Playwright empties it before each run, so a failed run
  // leaves no profile behind for long.
  const profile = test.info().outputPath("profile");
  mkdirSync(profile, { recursive: true });
  const run = `s${SEED.toString(36)}${Math.random().toString(36).slice(2, 6)}`;
  const owners = [`${run}-ann`, `${run}-bob`];
  const db = `soak-${run}`;
  const model = new Model(owners);
  model.api = request;
  const faults = rng(SEED ^ 0x5eed);
  const chaos = rng(SEED ^ 0xc4a05);

  let context!: BrowserContext;
  const pages: Page[] = [];
  let tabSerial = 0;
  let faultsOn = true;
  let attempts = 0;
  let kills = 0;
  let killsMidRequest = 0;
  let closesMidRequest = 0;
  let closes = 0;
  const injected: Record<string, number> = {};
  const errors: string[] = [];
  let armed: null | { kind: "kill" } | { kind: "close"; page: Page } = null;
  let onArmedRequest: ((r: Route) => Promise<void>) | null = null;

  // ---- the wire: faults drawn from the seed, injected on the client side ---------------
  async function onRecords(route: Route) {
    const req = route.request();
    attempts++;
    let from: Page | null = null;
    try {
      from = req.frame().page();
    } catch {
      /* not a page's request */
    }
    try {
      if (armed && onArmedRequest && (armed.kind === "kill" || from === armed.page)) {
        const act = onArmedRequest;
        armed = null;
        onArmedRequest = null;
        return await act(route);
      }
      if (!faultsOn) return await route.continue();
      const r = faults();
      const count = (k: string) => (injected[k] = (injected[k] ?? 0) + 1);
      if (r < 0.05) {
        count("failed before the server");
        return await route.abort("connectionrefused");
      }
      if (r < 0.10) {
        count("answer lost after commit");
        await route.fetch();
        return await route.abort("connectionreset");
      }
      if (r < 0.13) {
        count("503 Retry-After");
        return await route.fulfill({ status: 503, headers: { "Retry-After": "1" }, contentType: "application/json", body: "{}" });
      }
      if (r < 0.16) {
        count("5xx");
        return await route.fulfill({ status: faults() < 0.5 ? 500 : 502, contentType: "application/json", body: "{}" });
      }
      if (r < 0.18) {
        count("429");
        return await route.fulfill({ status: 429, headers: { "Retry-After": "1" }, contentType: "application/json", body: "{}" });
      }
      if (r < 0.20) {
        count("401");
        return await route.fulfill({ status: 401, contentType: "application/json", body: '{"code":"SESSION_EXPIRED"}' });
      }
      if (r < 0.23) {
        // The server commits, the answer comes after the lease: another tab takes over.
        count("slow answer after commit");
        const res = await route.fetch();
        await new Promise((ok) => setTimeout(ok, LEASE + 500));
        return await route.fulfill({ response: res });
      }
      return await route.continue();
    } catch {
      /* the page or the browser went away with the request: that is the point */
    }
  }

  async function report(ev: any) {
    if (ev.type === "send") model.sent(ev);
    else if (ev.type === "stale") model.stale(ev);
    else if (ev.type === "error") errors.push(`${ev.where}: ${ev.code} ${ev.message}`);
  }

  async function openPage(slot: number): Promise<Page> {
    const page = context.pages().find((p) => p.url() === "about:blank" && !pages.includes(p)) ?? (await context.newPage());
    const skew = Math.round((chaos() * 2 - 1) * SKEW);
    const q = new URLSearchParams({
      db, tab: `tab-${++tabSerial}`, owners: owners.join(","), skew: String(skew), lease: String(LEASE),
      seed: String((SEED + tabSerial * 7919) >>> 0),
    });
    await page.goto(`/soak/app.html?${q}`);
    await page.waitForFunction(() => (window as any).soak?.ready === true);
    await page.evaluate(() => (window as any).soak.startLoop());
    pages[slot] = page;
    return page;
  }

  async function startBrowser() {
    context = await launch(profile, baseURL!);
    await context.exposeFunction("soakReport", report);
    await context.route("**/soak/*", (route) =>
      route.fulfill({ path: join(PAGE_DIR, new URL(route.request().url()).pathname.replace("/soak/", "")) }));
    await context.route("**/api/records/**", onRecords);
    for (let i = 0; i < PAGES; i++) await openPage(i);
    // Whatever the kill interrupted, the records and the queue agree.
    await model.checkLocal(pages[0], `after launch ${kills}`);
  }

  // ---- chaos events: every tab paused between edits, then one event -------------------
  const { edit, event } = events();

  /** Waits for the next request of the armed kind, runs `act` on it; gives up after 5 s. */
  async function armAndWait(a: NonNullable<typeof armed>, act: (r: Route) => Promise<void>): Promise<boolean> {
    let started = false;
    let finish!: () => void;
    const finished = new Promise<void>((ok) => (finish = ok));
    armed = a;
    onArmedRequest = async (r) => {
      started = true;
      try {
        await act(r);
      } finally {
        finish();
      }
    };
    await Promise.race([finished, new Promise((t) => setTimeout(t, 5_000))]);
    armed = null;
    onArmedRequest = null;
    if (started) await finished;
    return started;
  }

  async function browserKill(slot: number) {
    // Something to send, then kill the browser while a request of a flush is on the wire:
    // half before the server saw it, half after it committed.
    for (let i = 0; i < 3; i++) await model.create(pages[slot], chaos);
    const afterCommit = chaos() < 0.5;
    const hit = await armAndWait({ kind: "kill" }, async (route) => {
      if (afterCommit) await route.fetch().catch(() => {});
      await killBrowser(context, profile);
    });
    if (!hit) await killBrowser(context, profile);
    else killsMidRequest++;
    kills++;
    pages.length = 0;
    await startBrowser();
  }

  async function tabClose(slot: number) {
    const page = pages[slot];
    const afterCommit = chaos() < 0.5;
    await model.create(page, chaos);
    const hit = await armAndWait({ kind: "close", page }, async (route) => {
      if (afterCommit) await route.fetch().catch(() => {});
      await page.close();
    });
    if (!hit) await page.close();
    else closesMidRequest++;
    closes++;
    await openPage(slot);
  }

  await startBrowser();

  // ---- the app loops: each tab edits records of both accounts --------------------------
  const killEvery = Math.max(50, Math.min(500, Math.floor(OPS / 4)));
  const closeEvery = Math.max(25, Math.min(200, Math.floor(OPS / 8)));
  let done = 0;
  const workers = Array.from({ length: PAGES }, (_, slot) => (async () => {
    const draw = rng(SEED + slot * 104_729);
    while (done < OPS) {
      const n = ++done;
      await edit(() => model.step(pages[slot], draw));
      if (n % 25 === 0) await edit(() => model.fixBlocked(pages[slot], draw));
      if (n % killEvery === 0) await event(() => browserKill(slot));
      else if (n % closeEvery === 0) await event(() => tabClose(slot));
      if (draw() < 0.3) await new Promise((ok) => setTimeout(ok, Math.floor(draw() * 15)));
    }
  })());
  await Promise.all(workers);

  // ---- faults off: drain ------------------------------------------------------------------
  faultsOn = false;
  const drainStart = Date.now();
  let stuck: any[] = [];
  for (;;) {
    const left = await model.handleLeftovers(pages[0]);
    if (left === 0) break;
    if (Date.now() - drainStart > 60_000) {
      for (const o of owners) stuck.push(...(await pages[0].evaluate((o) => (window as any).soak.outbox.rows(o), o)));
      break;
    }
    await new Promise((ok) => setTimeout(ok, 300));
  }
  for (const p of pages) await p.evaluate(() => (window as any).soak.stopLoop());

  // ---- what the server did -----------------------------------------------------------------
  const result = await model.verify(request, pages[0]);
  await model.checkLocal(pages[0], "after the drain");
  const localDiffering = await model.localDiffering(request, pages[0]);
  await context.close();
  rmSync(profile, { recursive: true, force: true });

  const secs = Math.round((Date.now() - started) / 1000);
  const faultsLine = Object.entries(injected).map(([k, v]) => `${k} ${v}`).join(", ");
  console.log(`[soak] edits of a pending: target that met an empty scope: ${model.vanishedIntents}`);
  console.log(`[soak] faults: ${faultsLine}; tabs closed ${closes} (${closesMidRequest} with a request on the wire); ` +
    `browser SIGKILLs ${kills} (${killsMidRequest} with a request on the wire)`);
  for (const line of result.details.slice(0, 20)) console.log(`[soak] ${line}`);
  for (const key of model.lostRecs) {
    for (const line of await model.history(request, `#${key}`, model.recs[key].owner)) console.log(`[soak]   ${line}`);
  }
  for (const [target, owner] of model.differingRecs) {
    for (const line of await model.history(request, target, owner)) console.log(`[soak]   ${line}`);
  }
  for (const row of stuck) {
    console.log(`[soak] not drained: ${JSON.stringify(row)}`);
    for (const line of await model.history(request, row.target, row.owner)) console.log(`[soak]   ${line}`);
  }
  for (const line of model.localDetails.slice(0, 20)) console.log(`[soak] ${line}`);
  if (errors.length) console.log(`[soak] flush errors: ${errors.length}, first: ${errors[0]}`);
  console.log(
    `SOAK seed=${SEED} ops=${OPS} tabs=${PAGES}: enqueued ${result.enqueued}; merged ${result.merged}, ` +
    `cancelled ${result.cancelled} (coalesced by the library); discarded by the user ${result.discarded}; ` +
    `attempts ${attempts}; effects applied ${result.effects}; duplicate effects ${result.duplicates}; ` +
    `lost operations ${result.lost}; stale answers ${result.staleAnswers}, that changed a row ${result.staleChanged}; ` +
    `records differing from the last write ${result.differing} of ${result.records}; ` +
    `local records: invariant broken ${model.localViolations}, differing from the server ${localDiffering}; ` +
    `browser kills ${kills}, tabs closed ${closes}; ${secs} s`,
  );
  expect(stuck, "rows left after the drain").toEqual([]);
  expect(result.duplicates, "duplicate effects").toBe(0);
  expect(result.lost, "lost operations").toBe(0);
  expect(result.staleChanged, "stale answers that changed a row").toBe(0);
  expect(result.differing, "records whose server state differs from the user's last write").toBe(0);
  expect(model.localViolations, "a pending local record without its operation, or a queued create without its record").toBe(0);
  expect(localDiffering, "local records differing from the server after the drain").toBe(0);
  expect(result.enqueued).toBeGreaterThanOrEqual(OPS);
  expect(kills, "the browser was killed mid-flush").toBeGreaterThanOrEqual(OPS >= 1000 ? 3 : 1);
});
