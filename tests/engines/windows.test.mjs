// The essential multi-page rows of the contract (docs/contract.md §13 rows 1, 2, 3 and the
// §12 cross-tab notice) in one engine, two windows of one browser session on the gate's
// origin, so both share one IndexedDB. Driven through WebDriver: run by tests/engines/windows.sh
// with ENGINE, DRIVER_URL and BASE_URL set. Playwright keeps the full Chromium suite
// (tests/e2e); these are the same scenarios, with the request holding Playwright's routes do
// done by a wrapper around the page's fetch instead.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Session } from "./webdriver.mjs";

const { ENGINE, DRIVER_URL, BASE_URL, MINIBROWSER } = process.env;
const T0 = 1_700_000_000_000;
const LEASE = 10_000;

const capabilities = {
  firefox: { browserName: "firefox", "moz:firefoxOptions": { binary: "/usr/bin/firefox-esr", args: ["-headless"] } },
  webkit: { "webkitgtk:browserOptions": { binary: MINIBROWSER, args: ["--automation"] } },
}[ENGINE];
assert.ok(capabilities && DRIVER_URL && BASE_URL, "ENGINE (firefox|webkit), DRIVER_URL and BASE_URL are set");

let s;
let A;
let B;
before(async () => {
  s = await Session.create(DRIVER_URL, capabilities);
  A = s.current;
  B = await s.newWindow();
  const c = s.capabilities;
  console.log(`${ENGINE}: ${c.browserName} ${c.browserVersion}`);
});
after(async () => {
  await s?.close();
});

const uid = () => Math.random().toString(36).slice(2, 9);

/** Opens the demo in window `w` as one "tab": its own tab id and clock, no timer flush. */
async function openTab(w, o) {
  const q = new URLSearchParams({
    db: o.db, tab: o.tab, users: o.users.join(","), clock: String(o.clock ?? T0), autoflush: "0", lease: String(LEASE),
  });
  await s.goto(w, `${BASE_URL}/?${q}`);
  await poll(() => s.run(w, () => window.outboxDemo?.ready === true), (ready) => ready === true, "the demo is ready");
  // Holds /api/records requests on demand (Playwright's page.route in tests/e2e), counts sends.
  await s.run(w, () => {
    const real = window.fetch.bind(window);
    window.__hold = { n: 0, held: [], sends: 0 };
    window.fetch = (url, init) => {
      // As Playwright's "**/api/records/**": the sends, not the demo's GET /api/records listing.
      if (!String(url).includes("/api/records/")) return real(url, init);
      window.__hold.sends++;
      if (window.__hold.n > 0) {
        window.__hold.n--;
        return new Promise((res, rej) => window.__hold.held.push({ go: () => res(real(url, init)), res, rej }));
      }
      return real(url, init);
    };
  });
}

async function poll(get, ok, what, ms = 10_000) {
  const end = Date.now() + ms;
  let last;
  for (;;) {
    try {
      last = await get();
      if (ok(last)) return last;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}; last: ${JSON.stringify(last?.message ?? last)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const rows = (w, owner) => s.run(w, (o) => window.outboxDemo.outbox.rows(o ?? window.outboxDemo.owner()), owner ?? null);
const enqueue = (w, op) => s.run(w, (op) => window.outboxDemo.outbox.enqueue({ owner: window.outboxDemo.owner(), ...op }), op);
const flush = (w) => s.run(w, () => window.outboxDemo.flushNow());
const startFlush = (w) => s.run(w, () => { window.__flush = window.outboxDemo.flushNow(); window.__flush.catch(() => {}); });
const flushResult = (w) => s.run(w, () => window.__flush);
const setClock = (w, t) => s.run(w, (t) => { window.__now = t; }, t);
const hold = (w, n = 1) => s.run(w, (n) => { window.__hold.n += n; }, n);
const waitHeld = (w, n = 1) => poll(() => s.run(w, () => window.__hold.held.length), (k) => k >= n, `${n} held request(s)`);
/** Lets the first held request of `w` go to the server, or answers it with `status`. */
const release = (w, status) =>
  s.run(w, (status) => {
    const h = window.__hold.held.shift();
    if (status) h.res(new Response("{}", { status, headers: { "Content-Type": "application/json" } }));
    else h.go();
  }, status ?? null);

async function effects(actor) {
  const all = await (await fetch(`${BASE_URL}/api/effects`)).json();
  return all.filter((e) => e.actor === actor);
}
const timesApplied = async (actor, opId) => (await effects(actor)).filter((e) => e.opId === opId).reduce((n, e) => n + e.count, 0);

/**
 * Starts `call` (a page function of `args`) in both windows at once: B waits on a
 * BroadcastChannel, A posts to it and starts in the same task. Returns both results.
 */
async function race(call, args) {
  const ch = `race-${uid()}`;
  await s.run(B, (ch, call, args) => {
    const f = new Function(`return (${call});`)();
    window.__race = new Promise((ok) => {
      const c = new BroadcastChannel(ch);
      c.onmessage = () => { c.close(); ok(f(...args)); };
    });
    window.__race.catch(() => {});
  }, ch, String(call), args);
  await s.run(A, (ch, call, args) => {
    const f = new Function(`return (${call});`)();
    const c = new BroadcastChannel(ch);
    c.postMessage("go");
    c.close();
    window.__race = f(...args);
    window.__race.catch(() => {});
  }, ch, String(call), args);
  return [await s.run(A, () => window.__race), await s.run(B, () => window.__race)];
}

/** A server record created through window `w`'s own outbox (SPEC §13 row 1 needs one). */
async function serverRecord(w) {
  const row = await enqueue(w, { kind: "create", body: { entity: "workout", weight: 1 } });
  const report = await flush(w);
  const r = report.receipts.find((x) => x.id === row.id);
  assert.ok(r, "the create was answered");
  return r.receipt;
}

async function twoTabs(bClock) {
  const user = `u${uid()}`;
  const db = `db-${uid()}`;
  await openTab(A, { db, tab: "tab-a", users: [user] });
  await openTab(B, { db, tab: "tab-b", users: [user], clock: bClock });
  return user;
}

test("§13 row 2: two windows claim one queued create at once, exactly one wins", async () => {
  const user = await twoTabs();
  const c1 = await enqueue(A, { kind: "create", body: { entity: "plan", title: "x" } });
  const tickets = await race((o, id) => window.outboxDemo.outbox.claim(o, id), [user, c1.id]);
  assert.equal(tickets.filter((t) => t !== null).length, 1, `one ticket: ${JSON.stringify(tickets)}`);
  assert.equal(tickets.find((t) => t !== null).fence, 1);

  // Whole flushes racing on a fresh create: one send, one effect.
  const c2 = await enqueue(A, { kind: "create", body: { entity: "plan", title: "y" } });
  const [ra, rb] = await race(() => window.outboxDemo.flushNow(), []);
  assert.equal(ra.claimed + rb.claimed, 1, `claims: ${ra.claimed} + ${rb.claimed}`);
  const sends = (await s.run(A, () => window.__hold.sends)) + (await s.run(B, () => window.__hold.sends));
  assert.equal(sends, 1, "one request reached the network");
  assert.equal(await timesApplied(user, c2.id), 1);
  assert.deepEqual((await rows(A)).map((r) => r.id), [c1.id]);
});

test("§13 row 3: after the lease the other window takes over with fence 2; the old window's late success changes nothing", async () => {
  const user = await twoTabs(T0 + LEASE + 1);
  const c1 = await enqueue(A, { kind: "create", body: { entity: "workout", weight: 60 } });
  await hold(A);
  await startFlush(A);
  await waitHeld(A);
  await hold(B);
  await startFlush(B);
  await waitHeld(B);
  const taken = (await rows(B))[0];
  assert.equal(taken.claim.tabId, "tab-b");
  assert.equal(taken.claim.fence, 2);

  // A's request reaches the server late; its success is not A's to apply.
  await release(A);
  const repA = await flushResult(A);
  assert.equal(repA.receipts.length, 1);
  assert.equal(repA.receipts[0].id, c1.id);
  assert.equal(repA.receipts[0].applied, false);
  assert.deepEqual((await rows(A))[0], taken, "the row is as B's takeover left it");

  await release(B);
  const repB = await flushResult(B);
  assert.equal(repB.succeeded, 1);
  assert.equal(repB.receipts[0].replayed, true);
  assert.deepEqual(await rows(B), []);
  assert.equal(await timesApplied(user, c1.id), 1);
});

test("§13 row 1: an update enqueued in one window over the other's in-flight update waits as its successor", async () => {
  const user = await twoTabs();
  const rec = await serverRecord(A);
  await hold(A);
  const u1 = await enqueue(A, { kind: "update", target: rec.serverId, body: { weight: 80 } });
  await startFlush(A);
  await waitHeld(A);
  const u2 = await enqueue(B, { kind: "update", target: rec.serverId, body: { weight: 81 } });
  assert.equal(u2.successorOf, u1.id);
  // B's own flush sends nothing while its predecessor is in flight.
  const repB = await flush(B);
  assert.equal(repB.claimed, 0);
  assert.equal(await s.run(B, () => window.__hold.sends), 0);
  await release(A, 503);
  const repA = await flushResult(A);
  assert.deepEqual([repA.claimed, repA.deferred], [1, 1]);
  const after = await rows(A);
  assert.equal(after.find((r) => r.id === u1.id).state, "queued");
  assert.deepEqual(after.find((r) => r.id === u2.id), u2);
  await setClock(A, T0 + 60_000);
  assert.equal((await flush(A)).succeeded, 2);
  assert.deepEqual((await effects(user)).slice(-2).map((e) => e.opId), [u1.id, u2.id]);
  assert.deepEqual(await rows(B), []);
});

test("§12: a change committed in one window reaches subscribe callbacks in the other", async () => {
  const user = await twoTabs();
  await s.run(B, () => {
    window.__notices = [];
    window.outboxDemo.outbox.subscribe((n) => window.__notices.push(n));
  });
  await enqueue(A, { kind: "create", body: { entity: "plan", title: "x" } });
  const notices = await poll(() => s.run(B, () => window.__notices), (n) => n.length > 0, "a notice in window B");
  assert.deepEqual(notices, [{ tabId: "tab-a", change: "enqueue", owner: user }]);
});
