// Issue 34, part 5: subscribe with a filter, and liveRecords calling back with fresh records
// only when they changed, from any tab.
import { test, expect, type Page } from "@playwright/test";
import { uid } from "./helpers";
import { packagePage } from "./configured";

const SCHEMA = { version: 1, stores: [{ name: "todos", keyPath: "key" }, { name: "notes", keyPath: "key" }] };

async function open(page: Page, db: string) {
  await page.evaluate(async ({ db, schema }) => {
    window.t.outbox = await window.pkg.Outbox.open({ dbName: db, records: schema, owner: "alice" });
  }, { db, schema: SCHEMA });
}

test("subscribe(filter, callback) hears only the stores, owner and changes asked for; subscribe(callback) all", async ({ context }) => {
  const db = `db-${uid()}`;
  const a = await packagePage(context);
  const b = await packagePage(context);
  await open(a, db);
  await open(b, db);
  await b.evaluate(() => {
    const t = window.t;
    t.heard = { todos: [], bob: [], discards: [], all: [] };
    t.outbox.subscribe({ stores: ["todos"] }, (n: any) => t.heard.todos.push(n.records.map((r: any) => r.key).join()));
    t.outbox.subscribe({ owner: "bob" }, (n: any) => t.heard.bob.push(n.change));
    t.outbox.subscribe({ changes: ["discard"] }, (n: any) => t.heard.discards.push(n.owner));
    t.outbox.subscribe((n: any) => t.heard.all.push(n.change));
  });
  await a.evaluate(async () => {
    const o = window.t.outbox;
    await o.enqueue({ owner: "alice", kind: "update", target: "n:1", body: {} }, { writes: [{ store: "notes", put: { key: "n:1" } }] });
    await new Promise((r) => setTimeout(r, 100)); // past the channel's burst window
    await o.enqueue({ owner: "alice", kind: "update", target: "t:1", body: {} }, { writes: [{ store: "todos", put: { key: "t:1" } }] });
    await new Promise((r) => setTimeout(r, 100));
    const row = await o.enqueue({ owner: "bob", kind: "update", target: "x", body: {} });
    await new Promise((r) => setTimeout(r, 100));
    await o.discard("bob", row.id);
  });
  await expect.poll(() => b.evaluate(() => window.t.heard.all.length)).toBe(4);
  expect(await b.evaluate(() => window.t.heard)).toEqual({
    todos: ["t:1"],
    bob: ["enqueue", "discard"],
    discards: ["bob"],
    all: ["enqueue", "enqueue", "enqueue", "discard"],
  });
});

test("liveRecords: the records at once, then only when another tab changed them — not on queue-only commits", async ({ context }) => {
  const db = `db-${uid()}`;
  const a = await packagePage(context);
  const b = await packagePage(context);
  await open(a, db);
  await open(b, db);
  await b.evaluate(() => {
    window.t.calls = [];
    window.t.stop = window.t.outbox.liveRecords("todos", (records: any[]) => window.t.calls.push(records.map((r) => r.title)));
  });
  await expect.poll(() => b.evaluate(() => window.t.calls)).toEqual([[]]);
  // Tab A writes a todo: tab B's callback gets the fresh records.
  await a.evaluate(() =>
    window.t.outbox.enqueue(
      { owner: "alice", kind: "update", target: "t:1", body: { title: "milk" } },
      { writes: [{ store: "todos", put: { key: "t:1", title: "milk" } }] },
    ),
  );
  await expect.poll(() => b.evaluate(() => window.t.calls)).toEqual([[], ["milk"]]);
  // Commits that leave the todos as they are: a failing attempt, a note, a rewrite with the
  // same value. No call back.
  await a.evaluate(async () => {
    const o = window.t.outbox;
    await o.flush({ send: () => ({ type: "transient", code: "HTTP_503" }) });
    await o.enqueue({ owner: "alice", kind: "update", target: "n:1", body: {} }, { writes: [{ store: "notes", put: { key: "n:1" } }] });
    await o.enqueue({ owner: "alice", kind: "update", target: "t:1", body: { title: "milk" } }, { writes: [{ store: "todos", patch: "t:1", set: { title: "milk" } }] });
  });
  await b.waitForTimeout(500);
  expect(await b.evaluate(() => window.t.calls)).toEqual([[], ["milk"]]);
  // Its own tab's writes count too; after stop(), nothing.
  await b.evaluate(() =>
    window.t.outbox.enqueue(
      { owner: "alice", kind: "update", target: "t:2", body: {} },
      { writes: [{ store: "todos", put: { key: "t:2", title: "eggs" } }] },
    ),
  );
  await expect.poll(() => b.evaluate(() => window.t.calls)).toEqual([[], ["milk"], ["milk", "eggs"]]);
  await b.evaluate(() => window.t.stop());
  await a.evaluate(() =>
    window.t.outbox.enqueue({ owner: "alice", kind: "delete", target: "t:1" }, { writes: [{ store: "todos", delete: "t:1" }] }),
  );
  await b.waitForTimeout(500);
  expect(await b.evaluate(() => window.t.calls)).toHaveLength(3);
});
