// A dedicated module worker: opens the same database, enqueues, flushes, reports.
import { Outbox } from "tab-outbox";
import { fakeSend, RECORDS } from "./outbox.ts";

self.onmessage = async (ev: MessageEvent<{ dbName: string; owner: string }>) => {
  const { dbName, owner } = ev.data;
  try {
    const outbox = await Outbox.open({ dbName, records: RECORDS });
    const row = await outbox.enqueue({ owner, kind: "update", target: "worker:1", body: { from: "worker" } });
    const report = await outbox.flush({ owner, send: fakeSend });
    const tabId = outbox.tabId;
    outbox.close();
    postMessage({ enqueued: row?.id ?? "", report, tabId });
  } catch (e) {
    postMessage({ error: e instanceof Error ? `${(e as { code?: string }).code}: ${e.message}` : String(e) });
  }
};
