// The soak's peer: workbox-background-sync's Queue, in a service worker as its users run it,
// under the faults of the soak's schedule that apply to it, against the same gate, with the
// same Idempotency-Key per operation. It prints one PEER line (scripts/soak.sh prints it
// beside the SOAK line). Workbox's numbers depend on the draw and are not asserted; what is
// asserted is that the run completed, its queue drained, and its accounting adds up.
//
//   SOAK_PEER_OPS  operations (default min(SOAK_OPS, 500)); at least 1 (scripts/soak.sh
//                  --peer-ops 0 leaves this file out of the run)
//   PEER_PORT      the port of the peer's origin (default: a free one)
//
// Which faults apply. The soak draws, per request, from the same stream and thresholds:
// failed before the server (5 %) and answer lost after the gate committed (5 %) are applied
// as real dropped connections; the soak's status faults (503, 5xx, 429, 401) and its slow
// answers are not: the Queue stores a request only when fetch rejects and counts any HTTP
// answer as done, so they would measure its contract, not what a crash does to it. The
// sending context killed or closed mid-request: every `killEvery` operations the browser is
// SIGKILLed with a request on the wire (half of them after the gate committed) and relaunched
// on the same profile; every `closeEvery` a tab is closed with its own first send on the wire.
// For the Queue the sending context of a replay is the service worker, which a tab's close
// does not end; the kill ends it.
//
// Replays. The Queue replays on the `sync` event; headless Chromium may not fire it (its
// count is printed), so pages also ask the service worker to replay by message, now and then
// and in the drain, as an app's "back online" handler would. Replays are serialized in the
// worker (see peer/sw.js), so the test adds no concurrency of its own.
import { test, expect, type BrowserContext, type Page } from "@playwright/test";
import { mkdirSync, rmSync } from "node:fs";
import { launch, killBrowser } from "./browser";
import { events } from "./events";
import { effectsOf, rng } from "./model";
import { buildServiceWorker, startPeerOrigin, WORKBOX_VERSION, type Wire } from "./peer";

const SOAK_OPS = Number(process.env.SOAK_OPS ?? 1000);
const OPS = Number(process.env.SOAK_PEER_OPS ?? Math.min(SOAK_OPS, 500));
const PAGES = Math.max(4, Number(process.env.SOAK_PAGES ?? 4));
const SEED = Number(process.env.SOAK_SEED ?? Math.floor(Math.random() * 2 ** 31));

interface PeerOp {
  id: string;
  owner: string;
  kind: "create" | "update";
  /** When the page was asked to send it (test clock). */
  at: number;
}

test(`peer: workbox-background-sync, ${OPS} operations, ${PAGES} tabs`, async ({ request, baseURL }) => {
  // Never skipped: a peer of no operations would report nothing and pass.
  expect(OPS, "SOAK_PEER_OPS must be at least 1 (scripts/soak.sh --peer-ops 0 leaves the peer out)").toBeGreaterThan(0);
  test.setTimeout(Math.max(240_000, OPS * 600));
  console.log(`[peer] workbox-background-sync ${WORKBOX_VERSION}, seed ${SEED}`);
  const started = Date.now();
  const swDir = test.info().outputPath("sw");
  await buildServiceWorker(swDir);
  const profile = test.info().outputPath("profile");
  mkdirSync(profile, { recursive: true });
  const origin = await startPeerOrigin(baseURL!, swDir, Number(process.env.PEER_PORT ?? 0));

  const run = `p${SEED.toString(36)}${Math.random().toString(36).slice(2, 6)}`;
  const owners = [`${run}-ann`, `${run}-bob`];
  // The soak's own streams: the same per-request fault draws, the same event draws.
  const faults = rng(SEED ^ 0x5eed);
  const chaos = rng(SEED ^ 0xc4a05);

  const ops = new Map<string, PeerOp>();
  /** Server ids (`workout:<id>`) the app learned from answers to its own fetches, per account. */
  const serverIds: Record<string, string[]> = Object.fromEntries(owners.map((o) => [o, []]));
  let serial = 0;
  let failedFetches = 0;
  let faultsOn = true;
  let kills = 0;
  let killsMidRequest = 0;
  let killsMidReplay = 0;
  let killing = false;
  let unsentAtKill = 0;
  const killLog: Array<{ key: string; replay: boolean; afterCommit: boolean; at: number }> = [];
  const killTimes: number[] = [];
  let closes = 0;
  let closesMidRequest = 0;
  let closedAbortedBySw = 0;
  const injected: Record<string, number> = {};
  let armed: null | ((w: Wire) => boolean) = null;
  let onArmed: ((w: Wire) => Promise<void>) | null = null;

  // ---- the wire ---------------------------------------------------------------------------
  origin.onRecords = async (w) => {
    if (armed && onArmed && armed(w)) {
      const act = onArmed;
      armed = null;
      onArmed = null;
      return act(w);
    }
    if (!faultsOn) return w.deliver(await w.forward());
    const r = faults();
    const count = (k: string) => (injected[k] = (injected[k] ?? 0) + 1);
    if (r < 0.05) {
      count("failed before the server");
      return w.drop();
    }
    if (r < 0.10) {
      count("answer lost after commit");
      await w.forward();
      return w.drop();
    }
    w.deliver(await w.forward());
  };

  let context!: BrowserContext;
  const pages: Page[] = [];
  let tabSerial = 0;

  async function report(ev: any) {
    if (ev.type === "failed") failedFetches++;
    else if (ev.type === "answer" && ev.status === 201 && ev.body?.serverId) {
      const op = ops.get(ev.id);
      if (op) serverIds[op.owner].push(ev.body.serverId);
    }
  }

  async function openPage(slot: number): Promise<Page> {
    const page = context.pages().find((p) => p.url() === "about:blank" && !pages.includes(p)) ?? (await context.newPage());
    await page.goto(`${origin.url}/peer/app.html?tab=tab-${++tabSerial}`);
    await page.waitForFunction(() => (window as any).peer?.ready === true);
    pages[slot] = page;
    return page;
  }

  async function startBrowser() {
    context = await launch(profile, origin.url);
    await context.exposeFunction("peerReport", report);
    for (let i = 0; i < PAGES; i++) await openPage(i);
  }

  /** One operation of the user: a create, or an update of a record whose server id is known. */
  async function step(page: Page, draw: () => number, kind?: "create") {
    const owner = owners[Math.floor(draw() * owners.length)];
    const known = serverIds[owner];
    const update = kind !== "create" && known.length > 0 && draw() < 0.6;
    const w = ++serial;
    const id = `${run}-${w}`;
    const op: PeerOp = { id, owner, kind: update ? "update" : "create", at: Date.now() };
    ops.set(id, op);
    const [entity, sid] = update ? known[Math.floor(draw() * known.length)].split(":") : ["workout", undefined];
    const body = { weight: Math.floor(draw() * 1000), w };
    try {
      await page.evaluate((o) => (window as any).peer.send(o), { id, owner, kind: op.kind, entity, serverId: sid, body });
    } catch (e) {
      // Only while the browser is being killed: a call that never reached the wire was never
      // made as far as anyone can tell; one that did stays counted.
      if (!origin.attempts.has(id)) {
        ops.delete(id);
        unsentAtKill++;
      }
      if (!killing) throw e;
    }
  }

  // ---- events: every tab paused between operations, then one event (as in the soak) ------
  const { edit, event } = events();

  /** Arms `act` for the next request that matches, then runs `start`; gives up after `ms`. */
  async function armAndWait(
    match: (w: Wire) => boolean, act: (w: Wire) => Promise<void>, start: () => Promise<unknown>, ms = 5_000,
  ): Promise<boolean> {
    let hit = false;
    let finish!: () => void;
    const finished = new Promise<void>((ok) => (finish = ok));
    armed = match;
    onArmed = async (w) => {
      hit = true;
      try {
        await act(w);
      } finally {
        finish();
      }
    };
    await start().catch(() => {});
    await Promise.race([finished, new Promise((t) => setTimeout(t, ms))]);
    armed = null;
    onArmed = null;
    if (hit) await finished;
    return hit;
  }

  async function browserKill(slot: number) {
    // Kill the browser while a request is on the wire: half before the gate saw it, half
    // after it committed. First while the queue replays (the entry is out of the queue while
    // its request is on the wire); when the queue has nothing to replay, while the first send
    // of a new operation is.
    const afterCommit = chaos() < 0.5;
    const kill = async (w: Wire) => {
      killing = true;
      killLog.push({ key: w.key, replay: w.replay, afterCommit, at: Date.now() });
      if (afterCommit) await w.forward();
      await killBrowser(context, profile);
      w.drop();
    };
    const page = pages[slot];
    let hit = await armAndWait((w) => w.replay, kill, () => page.evaluate(() => (window as any).peer.replay()), 2_000);
    if (hit) killsMidReplay++;
    else hit = await armAndWait(() => true, kill, () => step(page, chaos, "create"));
    if (!hit) {
      killTimes.push(Date.now());
      await killBrowser(context, profile);
    } else killsMidRequest++;
    killing = false;
    kills++;
    pages.length = 0;
    await startBrowser();
  }

  async function tabClose(slot: number) {
    const page = pages[slot];
    const tab = new URL(page.url()).searchParams.get("tab");
    const afterCommit = chaos() < 0.5;
    const hit = await armAndWait((w) => w.tab === tab && !w.replay, async (w) => {
      const answer = afterCommit ? await w.forward() : null;
      await page.close();
      // The tab is gone; its request went out from the service worker, which lives on. If
      // Chromium ended that fetch with the tab, the worker queued it; else it goes on.
      await new Promise((ok) => setTimeout(ok, 200));
      if (w.gone()) {
        closedAbortedBySw++;
        return;
      }
      w.deliver(answer ?? (await w.forward()));
    }, () => step(page, chaos, "create"));
    if (!hit) await page.close();
    else closesMidRequest++;
    closes++;
    await openPage(slot);
  }

  await startBrowser();

  const killEvery = Math.max(50, Math.min(500, Math.floor(OPS / 4)));
  const closeEvery = Math.max(25, Math.min(200, Math.floor(OPS / 8)));
  let done = 0;
  const workers = Array.from({ length: PAGES }, (_, slot) => (async () => {
    const draw = rng(SEED + slot * 104_729);
    while (done < OPS) {
      const n = ++done;
      await edit(() => step(pages[slot], draw));
      // Now and then (about every 30 operations of all tabs) a page asks for a replay, so that
      // the queue holds a few requests between replays, as it does between sync events.
      if (draw() < 0.03) await edit(() => pages[slot].evaluate(() => (window as any).peer.replay()));
      if (n % killEvery === 0) await event(() => browserKill(slot));
      else if (n % closeEvery === 0) await event(() => tabClose(slot));
      if (draw() < 0.3) await new Promise((ok) => setTimeout(ok, Math.floor(draw() * 15)));
    }
  })());
  await Promise.all(workers);

  // ---- faults off: drain what the queue holds ---------------------------------------------
  faultsOn = false;
  const drainStart = Date.now();
  let left = -1;
  let syncEvents = 0;
  for (;;) {
    const r = await pages[0].evaluate(() => (window as any).peer.replayAndWait());
    const s = await pages[0].evaluate(() => (window as any).peer.size());
    left = s.left;
    syncEvents = s.syncEvents;
    if (r.ok && left === 0) break;
    if (Date.now() - drainStart > 60_000) break;
    await new Promise((ok) => setTimeout(ok, 300));
  }
  // Answers of sends still on the wire (the pages' own fetches) settle.
  await new Promise((ok) => setTimeout(ok, 1_000));
  await context.close();
  await origin.close();
  rmSync(profile, { recursive: true, force: true });

  // ---- what the gate applied --------------------------------------------------------------
  const effects = await effectsOf(request, owners);
  const count = new Map<string, number>();
  for (const e of effects) count.set(e.opId, (count.get(e.opId) ?? 0) + e.count);
  let appliedOnce = 0;
  let duplicatedOps = 0;
  let duplicates = 0;
  let lost = 0;
  const lostNeverOnWire: string[] = [];
  for (const k of killLog) killTimes.push(k.at);
  /** Sent at most 5 s before a kill: its fetch was still in the browser when it died. */
  const beforeKill = (op: PeerOp) => killTimes.some((t) => t >= op.at && t - op.at < 5_000);
  for (const [id] of ops) {
    const n = count.get(id) ?? 0;
    if (n === 0) {
      lost++;
      if (!origin.attempts.has(id)) lostNeverOnWire.push(id);
    } else if (n === 1) appliedOnce++;
    else {
      duplicatedOps++;
      duplicates += n - 1;
    }
  }
  const unknown = [...count.keys()].filter((id) => !ops.has(id));
  // The wire against the ledger: an operation has an effect exactly when the gate answered
  // it 2xx at least once (every answer of the gate passed through the peer's origin).
  const disagree: string[] = [];
  const statuses = new Map<number, number>();
  for (const [id] of ops) {
    const answers = origin.answers.get(id) ?? [];
    for (const st of answers) statuses.set(st, (statuses.get(st) ?? 0) + 1);
    const committed = answers.some((st) => st >= 200 && st < 300);
    if (committed !== (count.get(id) ?? 0) > 0) disagree.push(`${id}: gate answers [${answers.join(",")}], effects ${count.get(id) ?? 0}`);
  }
  const applied = effects.reduce((n, e) => n + e.count, 0);
  const wire = [...origin.attempts.entries()].filter(([k]) => ops.has(k));
  const attempts = wire.reduce((n, [, c]) => n + c, 0);
  const replays = attempts - wire.length;

  const unexplained = lostNeverOnWire.filter((id) => !beforeKill(ops.get(id)!));
  // Where each lost operation went: its request on the wire when the browser was killed (a
  // replay: the Queue had already taken it out; a first send: never queued), or still in
  // the browser then; anything else is "other" (none expected; listed above if any).
  const lostIds = [...ops.keys()].filter((id) => (count.get(id) ?? 0) === 0);
  const killedOnWire = new Map(killLog.map((k) => [k.key, k.replay]));
  const lostReplay = lostIds.filter((id) => killedOnWire.get(id) === true).length;
  const lostFirstSend = lostIds.filter((id) => killedOnWire.get(id) === false).length;
  const lostInBrowser = lostNeverOnWire.length - unexplained.length;
  const lostOther = lost - lostReplay - lostFirstSend - lostInBrowser;
  const secs = Math.round((Date.now() - started) / 1000);
  const faultsLine = Object.entries(injected).map(([k, v]) => `${k} ${v}`).join(", ");
  console.log(`[peer] faults: ${faultsLine}; tabs closed ${closes} (${closesMidRequest} with the tab's send on the wire, ` +
    `${closedAbortedBySw} of those ended with the tab); browser SIGKILLs ${kills} (${killsMidRequest} with a request on the wire, ` +
    `${killsMidReplay} of those a replay, the others a first send)`);
  console.log(`[peer] sync events the service worker saw since its last start: ${syncEvents}; left in the queue: ${left}; ` +
    `lost operations whose request never reached the wire: ${lostNeverOnWire.length} ` +
    `(${lostNeverOnWire.length - unexplained.length} sent less than 5 s before a browser kill); ` +
    `sends cut off by a kill before they reached the page (not counted): ${unsentAtKill}; ` +
    `the gate's answers: ${[...statuses].sort(([a], [b]) => a - b).map(([st, n]) => `${st} ×${n}`).join(", ")}`);
  for (const d of disagree.slice(0, 10)) console.log(`[peer] wire and ledger disagree: ${d}`);
  for (const id of lostIds.filter((id) => !killedOnWire.has(id) && !(lostNeverOnWire.includes(id) && beforeKill(ops.get(id)!)))) {
    console.log(`[peer] lost for another reason: ${id}, gate answers [${(origin.answers.get(id) ?? []).join(",")}], ` +
      `attempts ${origin.attempts.get(id) ?? 0}`);
  }
  for (const k of killLog) {
    console.log(`[peer] kill with ${k.replay ? "a replay" : "a first send"} of ${k.key} on the wire, ` +
      `${k.afterCommit ? "after the gate committed" : "before the gate saw it"}: applied ${count.get(k.key) ?? 0} times in all`);
  }
  console.log(
    `PEER workbox-background-sync ${WORKBOX_VERSION} seed=${SEED} ops=${OPS} tabs=${PAGES}: sent ${ops.size}; ` +
    `queued after a network error ${failedFetches}; attempts ${attempts} (replays ${replays}); effects applied ${applied}; ` +
    `duplicate effects ${duplicates}; lost operations ${lost} (at a browser kill: ${lostReplay} taken out of the queue ` +
    `for a replay, ${lostFirstSend} a first send on the wire, ${lostInBrowser} not yet sent by the browser; other ${lostOther}); resends the gate answered from its ledger ${origin.replayedByGate} ` +
    `(each a duplicate effect without the Idempotency-Key); browser kills ${kills}, tabs closed ${closes}; ${secs} s`,
  );

  // The run completed and its bookkeeping adds up; Workbox's own numbers are reported, not judged.
  expect(left, "requests left in the Queue after the drain").toBe(0);
  expect(unknown, "effects of operations the peer never sent").toEqual([]);
  expect(disagree, "operations with an effect = operations the gate answered 2xx").toEqual([]);
  expect(appliedOnce + duplicatedOps + lost, "every operation applied once, more than once, or not at all").toBe(ops.size);
  expect(applied, "effects applied = operations applied + duplicate effects").toBe(appliedOnce + duplicatedOps + duplicates);
  expect(ops.size).toBeGreaterThanOrEqual(OPS);
  expect(kills, "the browser was killed").toBeGreaterThanOrEqual(1);
});
