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
  let killsMidEnqueue = 0;
  let closesMidRequest = 0;
  let closes = 0;
  const injected: Record<string, number> = {};
  const errors: string[] = [];
  let armed: null | { kind: "kill" } | { kind: "close"; page: Page } = null;
  let onArmedRequest: ((r: Route) => Promise<void>) | null = null;

  // ---- attempts at the server --------------------------------------------------------------
  // Every request of the app passes here on its way to the gate and back, so the test sees
  // each attempt of an operation open (the request arrives) and close (its answer is handed
  // to the browser, its connection dropped, or the browser dies). Two attempts of one
  // operation open at once are a violation when the second began while the first's claim
  // still ran (its lease, counted from the claim the page read back, `X-Soak-Claimed-At`)
  // or came from the same tab (§5, §8) — whatever the gate then made of them.
  interface Attempt { op: string; tab: string; skew: number; claimedAt: number | null; start: number; end: number | null; tookOver?: boolean }
  const open = new Map<string, Attempt[]>();
  const finals = new Map<string, { at: number; tab: string; status: number }>();
  const tabDied = new Map<string, number>();
  const violations: string[] = [];
  let overlapsAfterLease = 0;
  /** Fences each operation's attempts carried (the claim as stored when it went out). */
  const fences = new Map<string, Set<number>>();
  let badClaims = 0;
  /** Slow answers waiting for another tab to take their row over (see onRecords). */
  const takeoverWaiters = new Map<string, { tab: string; go: () => void }>();
  let slowAnswers = 0;
  let slowTakenOver = 0;
  let ledgerReplays = 0;
  let blockedSent = 0;
  let resentAfterFinal = 0;
  const violation = (line: string) => {
    if (violations.length < 50) violations.push(line);
  };
  function begin(req: ReturnType<Route["request"]>): Attempt | null {
    const h = req.headers();
    const op = h["idempotency-key"];
    if (!op) return null;
    const a: Attempt = {
      op, tab: h["x-soak-tab"] ?? "?", skew: Number(h["x-soak-skew"] ?? 0),
      claimedAt: h["x-soak-claimed-at"] ? Number(h["x-soak-claimed-at"]) : null, start: Date.now(), end: null,
    };
    if (h["x-soak-blocked"]) {
      blockedSent++;
      violation(`${op}: sent by ${a.tab} while stored blocked (${h["x-soak-blocked"]})`);
    }
    // The claim this attempt went out under, as stored (§5): every claim adds 1 to the fence,
    // so one fence never goes out twice; its lease ends `leaseMs` after the claim, on the
    // claiming tab's clock (a few ms have passed since: the page reads it just before).
    const fence = h["x-soak-fence"] === undefined ? null : Number(h["x-soak-fence"]);
    if (fence !== null) {
      if (!fences.has(op)) fences.set(op, new Set());
      if (fences.get(op)!.has(fence)) {
        badClaims++;
        violation(`${op}: sent by ${a.tab} under fence ${fence}, which an earlier attempt carried`);
      }
      fences.get(op)!.add(fence);
    }
    const leaseLeft = h["x-soak-lease-left"] === undefined ? null : Number(h["x-soak-lease-left"]);
    if (leaseLeft !== null && (leaseLeft > LEASE + 1_000 || leaseLeft < -60_000)) {
      badClaims++;
      violation(`${op}: sent by ${a.tab} under a claim whose lease ends ${leaseLeft} ms from the tab's now (lease ${LEASE} ms)`);
    }
    // Another tab took over a row whose slow answer is held: the answer may go now, stale.
    const held = takeoverWaiters.get(op);
    if (held && held.tab !== a.tab) {
      held.go();
      a.tookOver = true;
    }
    for (const b of open.get(op) ?? []) {
      if (b.end !== null) continue;
      if (b.tab === a.tab) violation(`${op}: a second attempt from ${a.tab} while its first is open`);
      else if (b.claimedAt !== null && a.start + a.skew < b.claimedAt + LEASE) {
        violation(`${op}: ${a.tab} sent it ${b.claimedAt + LEASE - a.start - a.skew} ms before the lease of ${b.tab}'s open attempt ended`);
      } else overlapsAfterLease++;
    }
    // A final answer (a success, a refusal) handed promptly to a tab holding the claim ends
    // the operation: it is never sent again (unless the user re-saved it, under a new id).
    const f = finals.get(op);
    // A tab that died soon after its answer may not have written its ACK: the row is then
    // rightly sent again once its lease ends.
    const diedAfter = (tabDied.get(f?.tab ?? "") ?? Infinity) - (f?.at ?? 0);
    if (f && !model.isReissued(op) && diedAfter > 5_000) {
      resentAfterFinal++;
      violation(`${op}: sent again by ${a.tab} after ${f.tab} was answered ${f.status} ${a.start - f.at} ms before`);
    }
    if (!open.has(op)) open.set(op, []);
    open.get(op)!.push(a);
    return a;
  }
  function finish(a: Attempt | null, status?: number) {
    if (!a || a.end !== null) return;
    a.end = Date.now();
    open.set(a.op, open.get(a.op)!.filter((b) => b !== a));
    const final = status !== undefined && status >= 200 && status < 500 && ![401, 408, 409, 429].includes(status);
    // Handed over well before the claim could have run out for any tab, with time to spare
    // for the tab's ACK: no other tab may have taken the row over meanwhile.
    const prompt = a.claimedAt !== null && a.end + SKEW + 1_000 < a.claimedAt - a.skew + LEASE;
    if (final && prompt && !finals.has(a.op)) finals.set(a.op, { at: a.end, tab: a.tab, status: status! });
  }
  const stripped = (req: ReturnType<Route["request"]>) =>
    Object.fromEntries(Object.entries(req.headers()).filter(([k]) => !k.startsWith("x-soak-")));
  /** Forwards to the gate and hands its answer back. */
  async function pass(route: Route, a: Attempt | null) {
    const res = await route.fetch({ headers: stripped(route.request()) });
    if (res.headers()["idempotent-replayed"] === "true") ledgerReplays++;
    await route.fulfill({ response: res });
    finish(a, res.status());
  }

  // ---- the wire: faults drawn from the seed, injected on the client side ---------------
  async function onRecords(route: Route) {
    const req = route.request();
    attempts++;
    const attempt = begin(req);
    const fetchGate = async () => {
      const res = await route.fetch({ headers: stripped(req) });
      if (res.headers()["idempotent-replayed"] === "true") ledgerReplays++;
      return res;
    };
    // A takeover whose row's slow answer was just let go waits a second, so that the stale
    // answer reaches its tab while the row still exists under the new claim (§6: it must
    // change neither the row nor the records) rather than after the takeover's ACK.
    if (attempt?.tookOver) await new Promise((ok) => setTimeout(ok, 1_000));
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
      if (!faultsOn) return await pass(route, attempt);
      const r = faults();
      const count = (k: string) => (injected[k] = (injected[k] ?? 0) + 1);
      if (r < 0.05) {
        count("failed before the server");
        return await route.abort("connectionrefused");
      }
      if (r < 0.10) {
        count("answer lost after commit");
        await fetchGate();
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
        // The server commits, the answer comes after the lease: another tab takes over. Well
        // after it: other tabs' flushes of the owner wait up to a second for this tab's turn
        // (turnWaitMs) before one of them claims the row, and a takeover must come first.
        // The answer is held until another tab's attempt of the operation begins (its claim
        // is then stored), so that it arrives stale every time the library lets a takeover
        // happen — or after a long wait, when none came.
        count("slow answer after commit");
        const res = await fetchGate();
        slowAnswers++;
        const op = req.headers()["idempotency-key"];
        const taken = await new Promise<boolean>((ok) => {
          const timer = setTimeout(() => ok(false), LEASE * 4);
          takeoverWaiters.set(op, { tab: attempt?.tab ?? "?", go: () => { clearTimeout(timer); ok(true); } });
        });
        takeoverWaiters.delete(op);
        if (taken) slowTakenOver++;
        else if (process.env.SOAK_DEBUG) {
          const row = await pages[0]?.evaluate((id) => (window as any).soak.rawRows(id), op).catch((e) => String(e));
          console.error(`[soak] slow answer of ${op} not taken over; row now: ${JSON.stringify(row)}; now ${Date.now()}`);
        }
        await route.fulfill({ response: res });
        return finish(attempt, res.status());
      }
      return await pass(route, attempt);
    } catch (e) {
      /* the page or the browser went away with the request: that is the point */
      if (process.env.SOAK_DEBUG) console.error("[soak] route:", e);
    } finally {
      finish(attempt);
    }
  }

  /** Tabs that died (closed, or the browser killed): their attempts end there. */
  function died(tabs: string[]) {
    const now = Date.now();
    for (const t of tabs) tabDied.set(t, now);
    for (const list of open.values()) for (const a of list) if (tabs.includes(a.tab)) finish(a);
  }
  const tabOf = new Map<Page, string>();

  async function report(ev: any) {
    if (ev.type === "send") model.sent(ev);
    else if (ev.type === "stale") model.stale(ev);
    else if (ev.type === "error") errors.push(`${ev.where}: ${ev.code} ${ev.message}`);
  }

  async function openPage(slot: number, loop = true): Promise<Page> {
    const page = context.pages().find((p) => p.url() === "about:blank" && !pages.includes(p)) ?? (await context.newPage());
    const skew = Math.round((chaos() * 2 - 1) * SKEW);
    const q = new URLSearchParams({
      db, tab: `tab-${++tabSerial}`, owners: owners.join(","), skew: String(skew), lease: String(LEASE),
      seed: String((SEED + tabSerial * 7919) >>> 0),
    });
    tabOf.set(page, `tab-${tabSerial}`);
    await page.goto(`/soak/app.html?${q}`);
    await page.waitForFunction(() => (window as any).soak?.ready === true);
    if (loop) await page.evaluate(() => (window as any).soak.startLoop());
    pages[slot] = page;
    return page;
  }

  async function startBrowser() {
    context = await launch(profile, baseURL!);
    await context.exposeFunction("soakReport", report);
    await context.route("**/soak/*", (route) =>
      route.fulfill({ path: join(PAGE_DIR, new URL(route.request().url()).pathname.replace("/soak/", "")) }));
    await context.route("**/api/records/**", onRecords);
    for (let i = 0; i < PAGES; i++) await openPage(i, false);
    // Creates the kill interrupted: stored or not, decided before any tab flushes again.
    await model.resolveUncertain(pages[0]);
    // Whatever the kill interrupted, the records and the queue agree.
    await model.checkLocal(pages[0], `after launch ${kills}`);
    for (const p of pages) await p.evaluate(() => (window as any).soak.startLoop());
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
    const tabs = pages.map((p) => tabOf.get(p)!);
    if (kills % 2 === 1) {
      // Kill the browser during enqueues: creates of both accounts begun 4 ms apart in every
      // tab, the SIGKILL after a drawn 8–20 ms (some not begun, some inside their transaction,
      // some committed and perhaps already on the wire).
      const owner = (i: number) => model.owners[i % model.owners.length];
      const started = [0, 1, 2, 3, 4, 5].map(async (i) => {
        await new Promise((ok) => setTimeout(ok, i * 4));
        return model.createMaybe(pages[(slot + i) % pages.length], chaos, owner(i));
      });
      await new Promise((ok) => setTimeout(ok, 8 + Math.floor(chaos() * 12)));
      await killBrowser(context, profile);
      const returned = await Promise.all(started);
      if (returned.includes(false)) killsMidEnqueue++;
    } else {
      // Something to send, then kill the browser while a request of a flush is on the wire:
      // half before the server saw it, half after it committed.
      for (let i = 0; i < 3; i++) await model.create(pages[slot], chaos);
      const afterCommit = chaos() < 0.5;
      const hit = await armAndWait({ kind: "kill" }, async (route) => {
        if (afterCommit) await route.fetch({ headers: stripped(route.request()) }).catch(() => {});
        await killBrowser(context, profile);
      });
      if (!hit) await killBrowser(context, profile);
      else killsMidRequest++;
    }
    died(tabs);
    kills++;
    pages.length = 0;
    await startBrowser();
  }

  async function tabClose(slot: number) {
    const page = pages[slot];
    const afterCommit = chaos() < 0.5;
    await model.create(page, chaos);
    const hit = await armAndWait({ kind: "close", page }, async (route) => {
      if (afterCommit) await route.fetch({ headers: stripped(route.request()) }).catch(() => {});
      await page.close();
    });
    if (!hit) await page.close();
    else closesMidRequest++;
    died([tabOf.get(page)!]);
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
    `browser SIGKILLs ${kills} (${killsMidRequest} with a request on the wire, ${killsMidEnqueue} during enqueues: ` +
    `${model.enqueuesInterrupted} creates interrupted, ${model.enqueuesInterruptedCommitted} of them stored)`);
  console.log(`[soak] workload: ${["create", "update", "command", "delete", "retry"].map((k) => `${k} ${model.ops.filter((o) => o.kind === k).length}`).join(", ")}; ` +
    `attempts overlapping after the lease ${overlapsAfterLease}`);
  for (const line of violations.slice(0, 20)) console.log(`[soak] violation: ${line}`);
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
    `attempts ${attempts}; resends the gate answered from its ledger ${ledgerReplays}; ` +
    `attempts overlapping at the server ${violations.length - blockedSent - resentAfterFinal - badClaims}, sent again after a final answer ${resentAfterFinal}, sent while blocked ${blockedSent}, ` +
    `under a claim not as §5 writes it ${badClaims}; slow answers ${slowAnswers}, taken over ${slowTakenOver}; ` +
    `effects applied ${result.effects}; duplicate effects ${result.duplicates}; ` +
    `applied out of the user's order ${result.outOfOrder}; under another account ${result.wrongAccount}; refused unexpectedly ${model.unexpectedBlocked}; ` +
    `lost operations ${result.lost}; stale answers ${result.staleAnswers}, that changed a row ${result.staleChanged}; ` +
    `records differing from the last write ${result.differing} of ${result.records}; ` +
    `local records: invariant broken ${model.localViolations}, differing from the server ${localDiffering}; ` +
    `browser kills ${kills} (${killsMidRequest} mid-request, ${killsMidEnqueue} mid-enqueue), tabs closed ${closes}; ${secs} s`,
  );
  expect(violations, "attempts the library should not have made (overlapping, after a final answer, while blocked)").toEqual([]);
  expect(result.outOfOrder, "operations of a record applied out of the order the user made them").toBe(0);
  expect(result.wrongAccount, "operations applied under another account").toBe(0);
  expect(model.unexpectedBlocked, "rows refused for another reason than the user's invalid input").toBe(0);
  expect(stuck, "rows left after the drain").toEqual([]);
  expect(result.duplicates, "duplicate effects").toBe(0);
  expect(result.lost, "lost operations").toBe(0);
  expect(result.staleChanged, "stale answers that changed a row").toBe(0);
  expect(result.differing, "records whose server state differs from the user's last write").toBe(0);
  expect(model.localViolations, "a pending local record without its operation, or a queued create without its record").toBe(0);
  expect(localDiffering, "local records differing from the server after the drain").toBe(0);
  expect(result.enqueued).toBeGreaterThanOrEqual(OPS);
  expect(kills, "the browser was killed mid-flush").toBeGreaterThanOrEqual(OPS >= 1000 ? 3 : 1);
  // The run did what it claims: every fault class, stale answers, kills mid-request and
  // mid-enqueue, each workload shape (a run that did not is no evidence).
  if (OPS >= 500) checkCoverage();
  function checkCoverage() {
    const classes = ["failed before the server", "answer lost after commit", "503 Retry-After", "5xx", "429", "401", "slow answer after commit"];
    for (const k of classes) expect(injected[k] ?? 0, `fault class "${k}" injected`).toBeGreaterThan(0);
    // Each slow answer waits for a takeover, so stale answers happen in every run.
    expect(slowTakenOver, "slow answers whose row another tab took over meanwhile").toBeGreaterThan(0);
    expect(result.staleAnswers, "stale answers (the stale-answer checks saw some)").toBeGreaterThan(0);
    expect(killsMidRequest, "browser kills with a request on the wire").toBeGreaterThan(0);
    expect(killsMidEnqueue, "browser kills during enqueues").toBeGreaterThan(0);
    expect(closesMidRequest, "tabs closed with a request on the wire").toBeGreaterThan(0);
    for (const k of ["update", "command", "delete"]) expect(model.ops.filter((o) => o.kind === k).length, `${k}s made`).toBeGreaterThan(0);
  }
});
