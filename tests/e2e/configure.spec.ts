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

// Contract §15: an option or argument whose reading throws (a throwing getter, a Proxy whose
// trap throws, a revoked Proxy) is INVALID_ARGUMENT with nothing written — never the app's
// own uncoded error, and never a synchronous throw out of an async method.
test("hostile options of open, flush and ack: INVALID_ARGUMENT, a promise, nothing written", async ({ context }) => {
  const page = await packagePage(context);
  const result = await page.evaluate(async (db) => {
    const { Outbox, OutboxError } = window.pkg;
    const boom = () => {
      throw new Error("x");
    };
    const throwingProxy = () => new Proxy({}, { ownKeys: boom, get: boom, getOwnPropertyDescriptor: boom, has: boom });
    const revoked = () => {
      const p = Proxy.revocable({}, {});
      p.revoke();
      return p.proxy;
    };
    /** How a call ended: "sync:<code>" for a synchronous throw, else its promise's outcome. */
    const outcome = async (call: () => unknown) => {
      let p: unknown;
      try {
        p = call();
      } catch (e: any) {
        return `sync:${e?.code}`;
      }
      if (!(p instanceof Promise)) return "not a promise";
      return p.then(
        () => "resolved",
        (e: any) => `${e instanceof OutboxError}:${e.code}:${/could not be read/.test(e.message)}`,
      );
    };
    const sends: string[] = [];
    const send = (op: any) => (sends.push(op.id), { type: "success", receipt: null });

    // open: a getter of an option the package keeps, of one the module reads (`backoff`), of
    // autoFlush's settings; a Proxy with throwing traps; a revoked Proxy.
    const badOpens = {
      owner: await outcome(() => Outbox.open({ dbName: `${db}-o1`, get owner() { return boom(); } })),
      backoff: await outcome(() => Outbox.open({ dbName: `${db}-o2`, backoff: { get baseMs() { return boom(); } } })),
      autoFlush: await outcome(() => Outbox.open({ dbName: `${db}-o3`, autoFlush: { get debounceMs() { return boom(); } } })),
      proxy: await outcome(() => Outbox.open(throwingProxy())),
      revoked: await outcome(() => Outbox.open(revoked())),
    };
    const names = (await indexedDB.databases()).map((d) => d.name);
    const created = [1, 2, 3].filter((i) => names.includes(`${db}-o${i}`));

    const outbox = await Outbox.open({
      dbName: db,
      owner: "alice",
      send,
      records: { version: 1, stores: [{ name: "todos", keyPath: "key" }] },
    });
    const row = await outbox.enqueue(
      { owner: "alice", kind: "update", target: "todo:1", body: { title: "x" } },
      { writes: [{ store: "todos", put: { key: "todo:1", title: "x" } }] },
    );
    const badFlushes = {
      getter: await outcome(() => outbox.flush({ get maxRows() { return boom(); } })),
      proxy: await outcome(() => outbox.flush(throwingProxy())),
      revoked: await outcome(() => outbox.flush(revoked())),
    };
    let message = "";
    await outbox.flush({ get maxRows() { return boom(); } }).catch((e: any) => (message = e.message));
    const afterFlushes = (await outbox.rows("alice")).map((r: any) => `${r.id}:${r.state}:${r.claim === undefined}:${r.sentAt === undefined}`);

    const ticket = await outbox.claim("alice", row.id);
    const reconcile = () => [{ store: "todos", patch: "todo:1", set: { synced: true } }];
    const badAcks = {
      getter: await outcome(() =>
        outbox.ack("alice", row.id, ticket, { type: "success", receipt: null }, { get reconcile() { return boom(); } }),
      ),
      proxy: await outcome(() => outbox.ack("alice", row.id, ticket, { type: "success", receipt: null }, throwingProxy())),
    };
    const afterAcks = { rows: (await outbox.rows("alice")).length, todos: await outbox.records("todos") };
    // The ticket still holds: the refused acks wrote nothing, this one applies.
    const applied = await outbox.ack("alice", row.id, ticket, { type: "success", receipt: null }, { reconcile });
    const todos = await outbox.records("todos");
    outbox.close();
    return { badOpens, created, badFlushes, message, afterFlushes, sends, badAcks, afterAcks, applied, todos, id: row.id };
  }, `db-${uid()}`);
  const refused = "true:INVALID_ARGUMENT:true";
  expect(result.badOpens).toEqual({ owner: refused, backoff: refused, autoFlush: refused, proxy: refused, revoked: refused });
  expect(result.created).toEqual([]);
  expect(result.badFlushes).toEqual({ getter: refused, proxy: refused, revoked: refused });
  expect(result.message).toBe("tab-outbox: flush options could not be read: x");
  expect(result.afterFlushes).toEqual([`${result.id}:queued:true:true`]); // not claimed, not sent
  expect(result.sends).toEqual([]);
  expect(result.badAcks).toEqual({ getter: refused, proxy: refused });
  expect(result.afterAcks).toEqual({ rows: 1, todos: [{ key: "todo:1", title: "x" }] });
  expect(result.applied).toBe("applied");
  expect(result.todos).toEqual([{ key: "todo:1", title: "x", synced: true }]);
});

test("hostile arguments of the synchronous calls and of records: INVALID_ARGUMENT", async ({ context }) => {
  const page = await packagePage(context);
  const result = await page.evaluate(async (db) => {
    const { Outbox, OutboxError, httpTransport } = window.pkg;
    const boom = () => {
      throw new Error("x");
    };
    const thrown = (call: () => unknown) => {
      try {
        call();
        return "returned";
      } catch (e: any) {
        return `${e instanceof OutboxError}:${e.code}:${/could not be read/.test(e.message)}`;
      }
    };
    const outbox = await Outbox.open({ dbName: db, records: { version: 1, stores: [{ name: "todos", keyPath: "key" }] } });
    await outbox.enqueue(
      { owner: "alice", kind: "update", target: "todo:1", body: { title: "x" } },
      { writes: [{ store: "todos", put: { key: "todo:1", title: "x" } }] },
    );
    const subscribeFilter = thrown(() => outbox.subscribe({ get stores() { return boom(); } }, () => {}));
    const subscribeList = thrown(() =>
      outbox.subscribe({ stores: new Proxy(["todos"], { get: boom }) }, () => {}),
    );
    const transport = thrown(() => httpTransport({ url: () => "/x", get headers() { return boom(); } }));
    const transportMethods = thrown(() => httpTransport({ url: () => "/x", method: new Proxy({}, { ownKeys: boom }) }));
    const records = await outbox.records("todos", { get range() { return boom(); } }).then(
      (r: unknown) => `resolved:${JSON.stringify(r)}`,
      (e: any) => `${e instanceof OutboxError}:${e.code}:${/could not be read/.test(e.message)}`,
    );
    outbox.close();
    return { subscribeFilter, subscribeList, transport, transportMethods, records };
  }, `db-${uid()}`);
  const refused = "true:INVALID_ARGUMENT:true";
  expect(result).toEqual({
    subscribeFilter: refused,
    subscribeList: refused,
    transport: refused,
    transportMethods: refused,
    records: refused,
  });
});
