// A module service worker: opens the page's database, enqueues, flushes and answers the
// page's message with the report.
import { Outbox } from "tab-outbox";
import { fakeSend, RECORDS } from "./outbox.ts";

// The few service worker types used here (the app's tsconfig has the DOM lib, which
// conflicts with the webworker lib).
interface SwMessageEvent extends MessageEvent {
  waitUntil(work: Promise<unknown>): void;
}
interface SwScope {
  addEventListener(type: "install", listener: () => void): void;
  addEventListener(type: "message", listener: (ev: SwMessageEvent) => void): void;
  skipWaiting(): Promise<void>;
}
declare const self: SwScope;

self.addEventListener("install", () => void self.skipWaiting());
self.addEventListener("message", (ev) => {
  const { dbName, owner } = ev.data as { dbName: string; owner: string };
  const port = ev.ports[0];
  const work = (async () => {
    try {
      const outbox = await Outbox.open({ dbName, records: RECORDS });
      const row = await outbox.enqueue({ owner, kind: "update", target: "sw:1", body: { from: "service worker" } });
      const report = await outbox.flush({ owner, send: fakeSend });
      const tabId = outbox.tabId;
      outbox.close();
      port.postMessage({ enqueued: row?.id ?? "", report, tabId });
    } catch (e) {
      port.postMessage({ error: e instanceof Error ? `${(e as { code?: string }).code}: ${e.message}` : String(e) });
    }
  })();
  ev.waitUntil(work);
});
