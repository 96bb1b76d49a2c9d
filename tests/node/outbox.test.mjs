// The package in Node, as an app's unit tests run it: node:test over fake-indexeddb, the
// package's own entry point (pkg/index.js), no wasm bytes passed by hand. Each scenario that
// depends on the module's state at start (before init, a failed init, process exit) runs in
// a fresh Node process (fixtures/*.mjs) and reports what it saw.
import "fake-indexeddb/auto";
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import init, { Outbox, classifyHttp } from "../../pkg/index.js";

const fixture = (name) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

/** Runs a fixture in its own process; it must exit by itself within `ms`. */
function run(name, ms = 20_000) {
  const r = spawnSync(process.execPath, [fixture(name)], { encoding: "utf8", timeout: ms });
  assert.equal(r.error?.code, undefined, `${name} did not exit within ${ms} ms (stdout: ${r.stdout})`);
  assert.equal(r.status, 0, `${name} failed: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split("\n").at(-1));
}

let db = 0;
const dbName = () => `node-test-${process.pid}-${++db}`;

test("init() in Node loads the .wasm next to the package, no bytes passed", async () => {
  await init();
  assert.deepEqual(classifyHttp(503, { "Retry-After": "2" }, null), { type: "transient", code: "HTTP_503", retryAfterMs: 2000 });
});

test("open, enqueue, flush with a fake send: the row is sent once and removed", async () => {
  const outbox = await Outbox.open({ dbName: dbName() });
  try {
    const row = await outbox.enqueue({ owner: "alice", kind: "update", target: "workout:42", body: { weight: 80 }, revision: 3 });
    assert.equal(row?.state, "queued");
    const sent = [];
    const report = await outbox.flush({
      owner: "alice",
      send: async (op) => {
        sent.push(op);
        return { type: "success", receipt: { revision: 4 } };
      },
    });
    assert.equal(sent.length, 1);
    assert.equal(sent[0].id, row.id);
    assert.deepEqual(sent[0].body, { weight: 80 });
    assert.equal(sent[0].revision, 3);
    assert.equal(report.succeeded, 1);
    assert.deepEqual(report.receipts.map((r) => r.receipt), [{ revision: 4 }]);
    assert.deepEqual(await outbox.rows("alice"), []);
  } finally {
    outbox.close();
  }
});

test("a transient answer keeps the row queued with the attempt recorded", async () => {
  let now = 1_000_000;
  const outbox = await Outbox.open({ dbName: dbName(), now: () => now, random: () => 0.5 });
  try {
    await outbox.enqueue({ owner: "bob", kind: "create", body: { name: "plan" } });
    const report = await outbox.flush({ owner: "bob", send: () => classifyHttp(503, null, null, now) });
    assert.equal(report.deferred, 1);
    const [row] = await outbox.rows("bob");
    assert.ok(row && !row.undecodable);
    assert.equal(row.state, "queued");
    assert.equal(row.evidence?.attemptCount, 1);
    assert.equal(row.evidence?.lastErrorCode, "HTTP_503");
    assert.ok((row.nextAttemptAt ?? 0) > now);
  } finally {
    outbox.close();
  }
});

test("hostile input gets a coded error and the module keeps working", async () => {
  const outbox = await Outbox.open({ dbName: dbName() });
  try {
    const cycle = {};
    cycle.self = cycle;
    await assert.rejects(outbox.enqueue({ owner: "alice", kind: "update", target: "t", body: cycle }), { code: "INVALID_ARGUMENT" });
    await assert.rejects(Outbox.open({}), { code: "INVALID_ARGUMENT" });
    assert.throws(() => classifyHttp(-1), { code: "INVALID_ARGUMENT" });
    assert.notEqual(await outbox.enqueue({ owner: "alice", kind: "update", target: "t", body: {} }), null);
  } finally {
    outbox.close();
  }
  await assert.rejects(outbox.rows("alice"), { code: "CLOSED" });
});

test("free() and Symbol.dispose (what `using` calls) let go of the handle: a running flush finishes, later calls fail with CLOSED, coded", async () => {
  const name = dbName();
  const outbox = await Outbox.open({ dbName: name });
  await outbox.enqueue({ owner: "alice", kind: "update", target: "w:1", body: { n: 1 } });
  let sending;
  const sendStarted = new Promise((started) => (sending = started));
  let answer;
  const answered = new Promise((done) => (answer = done));
  const flushing = outbox.flush({
    owner: "alice",
    send: async () => {
      sending();
      await answered;
      return { type: "success", receipt: {} };
    },
  });
  await sendStarted;
  outbox.free();
  outbox.free();
  outbox[Symbol.dispose]?.();
  outbox.close();
  await assert.rejects(outbox.rows("alice"), { code: "CLOSED" });
  await assert.rejects(outbox.enqueue({ owner: "alice", kind: "delete", target: "w:1" }), { code: "CLOSED" });
  assert.throws(() => outbox.subscribe(() => {}), { code: "CLOSED" });
  assert.throws(() => outbox.dbName, { code: "CLOSED" });
  answer();
  assert.equal((await flushing).succeeded, 1, "the flush running at free() finished");
  const again = await Outbox.open({ dbName: name });
  try {
    assert.deepEqual(await again.rows("alice"), [], "its answer was applied");
  } finally {
    again.close();
  }
});

test("before init(): Outbox.open loads the module itself; the sync functions throw NOT_INITIALIZED", () => {
  const seen = run("before-init.mjs");
  assert.deepEqual(seen.classifyBeforeInit, { name: "OutboxError", code: "NOT_INITIALIZED" });
  assert.deepEqual(seen.badBytes, { name: "OutboxError", code: "NOT_INITIALIZED" });
  assert.deepEqual(seen.nullInit, { name: "OutboxError", code: "NOT_INITIALIZED" });
  assert.deepEqual(seen.badSyncBytes, { name: "OutboxError", code: "NOT_INITIALIZED" });
  assert.deepEqual(seen.nullSync, { name: "OutboxError", code: "NOT_INITIALIZED" });
  assert.equal(seen.openedWithoutInit, true);
  assert.equal(seen.enqueued, "queued");
  assert.equal(seen.classifyAfterOpen, "success");
});

test("the process exits when the test ends, with close() and without it", () => {
  assert.deepEqual(run("exits.mjs"), { flushed: 1, closed: true });
  assert.deepEqual(run("exits-unclosed.mjs"), { flushed: 1, closed: false });
});

test("an open's timeout timer is cleared once it opened: the process lives on past it", () => {
  assert.deepEqual(run("outlives-open-timeout.mjs"), { state: "queued" });
});

/** `n` objects, each in the one before: `{x: {x: ... {}}}` is `n` levels deep. */
function nested(n) {
  const root = {};
  let d = root;
  for (let i = 1; i < n; i++) d = d.x = {};
  return root;
}

/** The raw IndexedDB database of an outbox, for writing what another writer might. */
function rawDb(name) {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(name);
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

// The package is a release build with the default 1 MB wasm stack (the debug test builds
// get 16 MB): the deepest value it accepts, and a deeper one another writer stored, must
// go through every walk (conversion, planner, fingerprint, send) without running out.
// Measured 2026-12-02: this test traps with a 128 KB stack and passes with 384 KB, so the
// default leaves more than 2.5× room.
test("the shipped build takes bodies 256 levels deep, refuses 257, and reads deeper stored rows", async () => {
  const name = dbName();
  const outbox = await Outbox.open({ dbName: name });
  try {
    for (const n of [255, 256]) {
      await outbox.enqueue({ owner: "dora", kind: "update", target: `deep:${n}`, body: nested(n) });
    }
    await assert.rejects(outbox.enqueue({ owner: "dora", kind: "update", target: "deep:257", body: nested(257) }), {
      code: "INVALID_ARGUMENT",
    });
    const sent = [];
    const report = await outbox.flush({ owner: "dora", send: (op) => (sent.push(op), { type: "success", receipt: {} }) });
    assert.equal(report.succeeded, 2);
    // Two records, sent in (savedAt, id) order: the ids are random.
    const byTarget = Object.fromEntries(sent.map((op) => [op.target, op.body]));
    assert.deepEqual(byTarget, { "deep:255": nested(255), "deep:256": nested(256) });

    // A row of 400 levels written by another writer: too deep to read, so it is reported
    // as undecodable, never sent, left as it is, and removed only when discarded.
    const db = await rawDb(name);
    const stored = { id: "deep-stored", owner: "dora", target: "deep:400", kind: "update", state: "queued", savedAt: 1, body: nested(400) };
    const raw = async () => {
      const tx = db.transaction("outbox", "readonly");
      const req = tx.objectStore("outbox").get("deep-stored");
      return new Promise((resolve, reject) => {
        req.onsuccess = () => resolve(req.result);
        req.onerror = () => reject(req.error);
      });
    };
    await new Promise((resolve, reject) => {
      const tx = db.transaction("outbox", "readwrite");
      tx.objectStore("outbox").put(stored);
      tx.oncomplete = resolve;
      tx.onerror = () => reject(tx.error);
    });
    const [row] = await outbox.rows("dora");
    assert.equal(row.id, "deep-stored");
    assert.equal(row.undecodable, true);
    assert.match(row.error, /deeper than/);
    assert.equal((await outbox.metrics("dora")).undecodable, 1);
    assert.deepEqual((await outbox.undecodable()).map((u) => u.id), ["deep-stored"]);
    const again = [];
    await outbox.flush({ owner: "dora", send: (op) => (again.push(op), { type: "success", receipt: {} }) });
    assert.deepEqual(again, []);
    assert.deepEqual(await raw(), stored);
    assert.equal(await outbox.discard("dora", "deep-stored"), true);
    assert.equal(await raw(), undefined);
    db.close();
    // The module goes on.
    await outbox.enqueue({ owner: "dora", kind: "create", body: { ok: true } });
    assert.equal((await outbox.rows("dora")).length, 1);
  } finally {
    outbox.close();
  }
});
