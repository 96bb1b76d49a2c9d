// The consumer page: no init() call (Outbox.open loads the module), everything imported
// from "tab-outbox" as installed from its tarball. The end-to-end test drives it through
// `window.consumer`.
import { Outbox, type FlushReport, type OutboxRow, type UndecodableRow } from "tab-outbox";
import "tab-outbox/inspector";
import { fakeSend, RECORDS, type Stores } from "./outbox.ts";
import { mountTodos, renders } from "./live.ts";
import serviceWorkerUrl from "./sw.ts?worker&url";

export interface Consumer {
  outbox: Outbox<Stores>;
  renders: { count: number };
  enqueue(owner: string, target: string, body: Record<string, unknown>): Promise<OutboxRow | null>;
  flush(owner: string): Promise<FlushReport>;
  rows(owner: string): Promise<Array<OutboxRow | UndecodableRow>>;
  notices: string[];
  inWorker(owner: string): Promise<WorkerResult>;
  inServiceWorker(owner: string): Promise<WorkerResult>;
}

export interface WorkerResult {
  enqueued: string;
  report: FlushReport;
  tabId: string;
}

declare global {
  interface Window {
    consumer?: Consumer;
  }
}

async function start(): Promise<void> {
  const params = new URLSearchParams(location.search);
  const dbName = params.get("db") ?? "consumer";
  const outbox = await Outbox.open<Stores>({ dbName, tabId: params.get("tab") ?? undefined, records: RECORDS });
  const notices: string[] = [];
  outbox.subscribe((notice) => notices.push(`${notice.tabId === outbox.tabId ? "self" : "other"}:${notice.change}`));
  // ?inspect=<owner>: the page shows the package's inspector for that owner.
  const inspect = params.get("inspect");
  if (inspect !== null) {
    const inspector = document.createElement("outbox-inspector");
    inspector.setAttribute("db", dbName);
    inspector.setAttribute("owner", inspect);
    document.body.append(inspector);
  }
  // ?react: the todos shown by a React component (tab-outbox/react).
  if (params.has("react")) mountTodos(outbox);
  window.consumer = {
    outbox,
    renders,
    enqueue: (owner, target, body) => outbox.enqueue({ owner, kind: "update", target, body }),
    flush: (owner) => outbox.flush({ owner, send: fakeSend }),
    rows: (owner) => outbox.rows(owner),
    notices,
    inWorker: (owner) =>
      new Promise((resolve, reject) => {
        const worker = new Worker(new URL("./worker.ts", import.meta.url), { type: "module" });
        worker.onmessage = (ev) => {
          worker.terminate();
          if (ev.data.error) reject(new Error(ev.data.error));
          else resolve(ev.data);
        };
        worker.onerror = (ev) => reject(new Error(ev.message));
        worker.postMessage({ dbName, owner });
      }),
    inServiceWorker: async (owner) => {
      const registration = await navigator.serviceWorker.register(serviceWorkerUrl, { type: "module" });
      const sw = registration.installing ?? registration.waiting ?? registration.active;
      if (!sw) throw new Error("no service worker");
      if (sw.state !== "activated") {
        await new Promise<void>((resolve) => sw.addEventListener("statechange", () => sw.state === "activated" && resolve()));
      }
      const channel = new MessageChannel();
      const answer = new Promise<WorkerResult>((resolve, reject) => {
        channel.port1.onmessage = (ev) => (ev.data.error ? reject(new Error(ev.data.error)) : resolve(ev.data));
      });
      sw.postMessage({ dbName, owner }, [channel.port2]);
      return answer;
    },
  };
  document.querySelector("#status")!.textContent = `ready ${outbox.tabId}`;
}

start().catch((e: unknown) => {
  document.querySelector("#status")!.textContent = `failed: ${e instanceof Error ? e.message : String(e)}`;
});
