// Issue 34, part 1: Outbox.open keeps the owner, the transport and the ports; flush() needs
// no arguments, a call's own fields override, and errors are OutboxErrors.
import { test, expect } from "@playwright/test";
import { uid, effects } from "./helpers";
import { packagePage } from "./configured";

test("flush() with no arguments sends with the configured owner, transport and reconcile", async ({ context, request }) => {
  const user = `u${uid()}`;
  const page = await packagePage(context);
  const result = await page.evaluate(async ({ user, db }) => {
    const { Outbox, httpTransport } = window.pkg;
    const outbox = await Outbox.open({
      dbName: db,
      records: { version: 1, stores: [{ name: "todos", keyPath: "key" }] },
      owner: () => user,
      transport: httpTransport({
        url: (op: any) => (op.kind === "create" ? "/api/records/plan" : `/api/records/${op.target.replace(":", "/")}`),
        headers: () => ({ Authorization: `Bearer ${user}.s1` }),
      }),
      reconcile: ({ row, answer }: any) =>
        answer.type === "success" && row.kind === "create"
          ? [{ store: "todos", rekey: row.target, to: answer.receipt.serverId, set: { revision: answer.receipt.revision } }]
          : [],
    });
    const row = await outbox.enqueue(
      { owner: user, kind: "create", body: { entity: "plan", title: "milk" } },
      { writes: [{ store: "todos", put: { title: "milk" }, atTarget: true }] },
    );
    const report = await outbox.flush();
    const todos = await outbox.records("todos");
    outbox.close();
    return { id: row.id, succeeded: report.succeeded, todos };
  }, { user, db: `db-${uid()}` });
  expect(result.succeeded).toBe(1);
  // reconcile ran although flush() was given none: the record moved to the server's key.
  expect(result.todos).toEqual([{ key: expect.stringMatching(/^plan:/), title: "milk", revision: 1 }]);
  expect((await effects(request, user)).map((e) => `${e.opId}:${e.kind}:${e.count}`)).toEqual([`${result.id}:create:1`]);
});

test("owner() read at each flush: null flushes nothing; a call's owner and send override", async ({ context }) => {
  const page = await packagePage(context);
  const result = await page.evaluate(async (db) => {
    const { Outbox } = window.pkg;
    let current: string | null = null;
    const sent: string[] = [];
    const outbox = await Outbox.open({
      dbName: db,
      owner: () => current,
      send: (op: any, context: any) => {
        sent.push(`configured:${op.owner}:${context.leaseMs}`);
        return { type: "success", receipt: null };
      },
      leaseMs: 4_000,
    });
    await outbox.enqueue({ owner: "alice", kind: "update", target: "t:1", body: { a: 1 } });
    await outbox.enqueue({ owner: "bob", kind: "update", target: "t:2", body: { b: 1 } });
    const nobody = await outbox.flush();
    const queuedAfterNobody = (await outbox.rows("alice")).length;
    current = "alice";
    const alice = await outbox.flush();
    const bob = await outbox.flush({ owner: "bob", send: () => (sent.push("own:bob"), { type: "success", receipt: null }) });
    outbox.close();
    return { nobody: nobody.claimed, queuedAfterNobody, alice: alice.succeeded, bob: bob.succeeded, sent };
  }, `db-${uid()}`);
  expect(result).toEqual({ nobody: 0, queuedAfterNobody: 1, alice: 1, bob: 1, sent: ["configured:alice:4000", "own:bob"] });
});

test("no owner given or configured: INVALID_ARGUMENT, an instance of OutboxError as every module error is", async ({ context }) => {
  const page = await packagePage(context);
  const result = await page.evaluate(async (db) => {
    const { Outbox, OutboxError } = window.pkg;
    const outbox = await Outbox.open({ dbName: db, send: () => ({ type: "success", receipt: null }) });
    const caught = async (p: Promise<unknown>) => p.then(() => "resolved", (e) => `${e instanceof OutboxError}:${e instanceof Error}:${e.code}`);
    const noOwner = await caught(outbox.flush());
    const badBody = await caught(outbox.enqueue({ owner: "a", kind: "update", target: "t", body: { d: new Date() } }));
    let syncThrow = "none";
    try {
      outbox.subscribe("not a function");
    } catch (e: any) {
      syncThrow = `${e instanceof OutboxError}:${e.code}`;
    }
    outbox.close();
    const closed = await caught(outbox.rows("a"));
    const badConfig = await caught(Outbox.open({ dbName: db, send: () => null, transport: { send: () => null } }));
    return { noOwner, badBody, syncThrow, closed, badConfig };
  }, `db-${uid()}`);
  expect(result).toEqual({
    noOwner: "true:true:INVALID_ARGUMENT",
    badBody: "true:true:INVALID_ARGUMENT",
    syncThrow: "true:INVALID_ARGUMENT",
    closed: "true:true:CLOSED",
    badConfig: "true:true:INVALID_ARGUMENT",
  });
});

test("ack uses the configured reconcile", async ({ context }) => {
  const page = await packagePage(context);
  const todos = await page.evaluate(async (db) => {
    const { Outbox } = window.pkg;
    const outbox = await Outbox.open({
      dbName: db,
      records: { version: 1, stores: [{ name: "todos", keyPath: "key" }] },
      reconcile: ({ row }: any) => [{ store: "todos", patch: row.target, set: { synced: true } }],
    });
    const row = await outbox.enqueue(
      { owner: "alice", kind: "update", target: "todo:1", body: { title: "x" } },
      { writes: [{ store: "todos", put: { key: "todo:1", title: "x" } }] },
    );
    const ticket = await outbox.claim("alice", row.id);
    await outbox.ack("alice", row.id, ticket, { type: "success", receipt: null });
    const all = await outbox.records("todos");
    outbox.close();
    return all;
  }, `db-${uid()}`);
  expect(todos).toEqual([{ key: "todo:1", title: "x", synced: true }]);
});
