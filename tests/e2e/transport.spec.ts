// Issue 34, part 2: httpTransport sets the keys, the revision and a JSON body, reads headers
// at send time, classifies every answer, turns a network error into NETWORK and a request
// still running at half the lease into TIMEOUT; receipts: 404 → null.
import { test, expect } from "@playwright/test";
import { uid } from "./helpers";
import { packagePage } from "./configured";

test("a request carries Idempotency-Key, If-Match, a JSON body, the method per kind and headers read at send time", async ({ context }) => {
  const page = await packagePage(context);
  const seen: Array<{ method: string; url: string; headers: Record<string, string>; body: string | null }> = [];
  await page.route("**/api/things/**", async (route) => {
    const r = route.request();
    seen.push({ method: r.method(), url: new URL(r.url()).pathname, headers: await r.allHeaders(), body: r.postData() });
    await route.fulfill({ status: 200, contentType: "application/json", body: JSON.stringify({ ok: true }) });
  });
  const report = await page.evaluate(async (db) => {
    const { Outbox, httpTransport } = window.pkg;
    let token = "first";
    const outbox = await Outbox.open({
      dbName: db,
      owner: "alice",
      transport: httpTransport({
        url: (op: any) => `/api/things/${op.target}`,
        headers: () => ({ Authorization: `Bearer ${token}` }),
      }),
    });
    await outbox.enqueue({ owner: "alice", kind: "update", target: "t1", body: { weight: 80 }, revision: "W/\"7\"" });
    await outbox.enqueue({ owner: "alice", kind: "delete", target: "t2" });
    token = "second"; // changed after open: read when sending
    const r = await outbox.flush();
    const ids = [];
    outbox.close();
    return { succeeded: r.succeeded, ids };
  }, `db-${uid()}`);
  expect(report.succeeded).toBe(2);
  const put = seen.find((s) => s.method === "PUT")!;
  expect(put.url).toBe("/api/things/t1");
  expect(put.headers["authorization"]).toBe("Bearer second");
  expect(put.headers["if-match"]).toBe('W/"7"');
  expect(put.headers["content-type"]).toBe("application/json");
  expect(put.headers["idempotency-key"]).toMatch(/^[0-9a-f-]{36}$/);
  expect(JSON.parse(put.body!)).toEqual({ weight: 80 });
  const del = seen.find((s) => s.method === "DELETE")!;
  expect(del.url).toBe("/api/things/t2");
  expect(del.body).toBeNull();
  expect(del.headers["if-match"]).toBeUndefined();
});

test("answers are classified; a network error is NETWORK; headers() null means no session: auth", async ({ context }) => {
  const page = await packagePage(context);
  await page.route("**/api/things/refused", (route) => route.fulfill({ status: 422, contentType: "application/json", body: "{}" }));
  await page.route("**/api/things/unreachable", (route) => route.abort("connectionrefused"));
  const rows = await page.evaluate(async (db) => {
    const { Outbox, httpTransport } = window.pkg;
    const outbox = await Outbox.open({
      dbName: db,
      owner: "alice",
      transport: httpTransport({ url: (op: any) => `/api/things/${op.target}`, headers: ({ owner }: any) => (owner === "alice" ? {} : null) }),
    });
    await outbox.enqueue({ owner: "alice", kind: "update", target: "refused", body: {} });
    await outbox.enqueue({ owner: "alice", kind: "update", target: "unreachable", body: {} });
    await outbox.enqueue({ owner: "bob", kind: "update", target: "refused", body: {} });
    await outbox.flush();
    await outbox.flush({ owner: "bob" });
    const all = [...(await outbox.rows("alice")), ...(await outbox.rows("bob"))];
    outbox.close();
    return all.map((r: any) => `${r.owner}:${r.target}:${r.state}:${r.blockedCode ?? r.evidence?.lastErrorCode}`);
  }, `db-${uid()}`);
  expect(rows.sort()).toEqual(["alice:refused:blocked:INVALID", "alice:unreachable:queued:NETWORK", "bob:refused:held:AUTH"]);
});

test("a request still running at half the lease is aborted: transient TIMEOUT, the flush ends before the lease", async ({ context }) => {
  const page = await packagePage(context);
  await page.route("**/api/things/**", () => {}); // never answered
  const result = await page.evaluate(async (db) => {
    const { Outbox, httpTransport } = window.pkg;
    const outbox = await Outbox.open({
      dbName: db,
      owner: "alice",
      leaseMs: 10_000, // aborted at 5 s
      transport: httpTransport({ url: (op: any) => `/api/things/${op.target}` }),
    });
    await outbox.enqueue({ owner: "alice", kind: "update", target: "slow", body: {} });
    const started = Date.now();
    const report = await outbox.flush();
    const tookMs = Date.now() - started;
    const [row] = await outbox.rows("alice");
    outbox.close();
    return { deferred: report.deferred, code: row.evidence.lastErrorCode, tookMs };
  }, `db-${uid()}`);
  expect(result.deferred).toBe(1);
  expect(result.code).toBe("TIMEOUT");
  expect(result.tookMs).toBeLessThan(10_000); // aborted before the claim's lease ended
});

test("findCreateReceipt: the stored answer, or null on 404", async ({ context }) => {
  const page = await packagePage(context);
  await page.route("**/api/receipts/known", (route) => route.fulfill({ status: 200, contentType: "application/json", body: '{"serverId":"plan:9"}' }));
  await page.route("**/api/receipts/unknown", (route) => route.fulfill({ status: 404, body: "" }));
  const found = await page.evaluate(async () => {
    const { httpTransport } = window.pkg;
    const t = httpTransport({ url: () => "/x", receiptUrl: (id: string) => `/api/receipts/${id}` });
    return [await t.findCreateReceipt({ owner: "a", operationId: "known" }), await t.findCreateReceipt({ owner: "a", operationId: "unknown" })];
  });
  expect(found).toEqual([{ serverId: "plan:9" }, null]);
});
