// Compiled with `tsc --noEmit` by the test suite: the package's .d.ts must describe the API
// an app writes against (SPEC §15), with real types for rows, outcomes and reports.
import init, { Outbox, classifyHttp, selectSendable, isRowInFlight } from "../../pkg/outbox_idb.js";
import type { OutboxRow, Outcome, FlushReport, Metrics, Ticket, SendOp, UndecodableRow, OutboxErrorCode } from "../../pkg/outbox_idb.js";

export async function app(): Promise<void> {
  await init();
  const outbox: Outbox = await Outbox.open({ dbName: "app-outbox", tabId: "tab-a", leaseMs: 10_000, now: () => Date.now(), random: Math.random });
  const row: OutboxRow | null = await outbox.enqueue({ owner: "alice", kind: "update", target: "workout:42", body: { weight: 80 }, revision: 3 });
  if (row) {
    const state: "queued" | "sending" | "held" | "blocked" = row.state;
    const fence: number | undefined = row.claim?.fence;
    void state, fence;
  }
  // `revision: null` is "no revision", as `OutboxRow.revision` reads it back.
  await outbox.enqueue({ owner: "alice", kind: "update", target: "workout:42", body: { weight: 81 }, revision: null });
  // A revision may be an opaque string (an ETag).
  await outbox.enqueue({ owner: "alice", kind: "update", target: "workout:42", body: [{ op: "replace", path: "/w", value: 1 }], revision: "W/\"7\"" });
  const all: Array<OutboxRow | UndecodableRow> = await outbox.rows("alice");
  // The listed rows narrow on `undecodable`.
  for (const r of all) {
    if (r.undecodable) {
      const why: string = r.error;
      const id: string | null = r.id;
      void why, id;
    } else {
      const state: OutboxRow["state"] = r.state;
      const fingerprint: string = r.fingerprint;
      void state, fingerprint;
    }
  }
  const send = async (op: SendOp): Promise<Outcome> => classifyHttp(op.attempt > 3 ? 503 : 200, { "Retry-After": "1" }, null, Date.now());
  const report: FlushReport = await outbox.flush({
    owner: "alice",
    send,
    prepareSuccessor: ({ intent, receipt }) => ({ target: String((receipt as { serverId: string }).serverId), body: intent.body }),
    findCreateReceipt: async () => null,
    maxRows: 100,
  });
  const n: number = report.succeeded + report.receipts.length + report.released;
  const other: Outbox = await Outbox.open({ dbName: "app-outbox", openTimeoutMs: 2_000 });
  try { other.close(); } catch (e) {
    const code: OutboxErrorCode = (e as { code: OutboxErrorCode }).code;
    void code;
  }
  const ticket: Ticket | null = await outbox.claim("alice", "row-id");
  if (ticket) {
    const applied: "applied" | "not-mine" = await outbox.ack("alice", "row-id", ticket, { type: "transient", retryAfterMs: 5 }, undefined);
    void applied;
  }
  const m: Metrics = await outbox.metrics(undefined);
  // Optional parameters of SPEC §15 can be left out.
  const everyOwner: Metrics = await outbox.metrics();
  const retried: boolean = await outbox.retryBlocked("alice", "row-id");
  const classified: Outcome = classifyHttp(503, { "Retry-After": "2" }, null);
  const networkError: Outcome = classifyHttp(0);
  if (ticket) {
    const applied: "applied" | "not-mine" = await outbox.ack("alice", "row-id", ticket, { type: "success", receipt: {} });
    void applied;
  }
  void everyOwner, retried, classified, networkError;
  const sendable: OutboxRow[] = selectSendable(all.filter((r): r is OutboxRow => !("undecodable" in r)), "tab-a", Date.now(), undefined);
  const sendableNow: OutboxRow[] = selectSendable(all, "tab-a", Date.now());
  void sendableNow;
  const flying: boolean = isRowInFlight(sendable[0], Date.now(), 10_000);
  const unsubscribe: () => void = outbox.subscribe((notice) => console.log(notice.change, notice.tabId));
  unsubscribe();
  void n, m, flying;
  outbox.close();
}
