// The benchmark's Workbox service worker: workbox-background-sync's `Queue` filled with N
// requests (as a failed fetch would have stored them; filling is setup, not timed), then
// one `replayRequests()` timed inside the worker. Bundled at run time by tests/soak/peer.ts
// (`buildServiceWorker`) and served by its origin as /peer/sw.js.
import { Queue } from "workbox-background-sync";

// `onSync` does nothing: registering a sync while online may fire `sync` at once, which would
// start replaying while the queue is still being filled; only the timed call below replays.
const queue = new Queue("tab-outbox-bench", { onSync: async () => {} });
const NOTE = "x".repeat(200);

self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

async function fill({ owner, run, n }) {
  for (let i = 0; i < n; i++) {
    const headers = { Authorization: `Bearer ${owner}.bench`, "Idempotency-Key": `${run}-${i}`, "Content-Type": "application/json" };
    const body = JSON.stringify({ entity: "workout", weight: i % 1000, note: NOTE });
    await queue.pushRequest({ request: new Request("/api/records/workout", { method: "POST", headers, body }) });
  }
  return { left: await queue.size() };
}

async function replay() {
  const t0 = performance.now();
  const ok = await queue.replayRequests().then(() => true, () => false);
  return { ms: performance.now() - t0, ok, left: await queue.size() };
}

self.addEventListener("message", (event) => {
  const port = event.ports[0];
  const work = event.data.type === "fill" ? fill(event.data) : replay();
  event.waitUntil(work.then((r) => port.postMessage(r), (e) => port.postMessage({ error: String(e) })));
});
