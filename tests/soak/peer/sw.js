// The peer's service worker: workbox-background-sync's `Queue` as its documentation uses it
// without workbox-routing ("advanced usage"): send the request; when the network fails,
// store it in the queue (IndexedDB 'workbox-background-sync') and let the queue replay it.
// Bundled at test time by tests/soak/peer.ts (Vite) into the test's output folder.
import { Queue } from "workbox-background-sync";

let syncEvents = 0;
let replays = Promise.resolve();
/**
 * One replay at a time. The `sync` event (Chromium has Background Sync; whether headless
 * Chromium fires it is up to the browser) and the test's "replay" message share this chain,
 * so the test adds no concurrency of its own: two overlapping `replayRequests()` could both
 * read the first entry before either deletes it.
 */
function replayOnce(queue) {
  const next = replays.then(() => queue.replayRequests());
  replays = next.catch(() => {});
  return next;
}

// Default options, except that the sync event's replay goes through the chain above.
const queue = new Queue("tab-outbox-soak-peer", {
  onSync: async ({ queue }) => {
    syncEvents++;
    await replayOnce(queue);
  },
});

self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

self.addEventListener("fetch", (event) => {
  if (!new URL(event.request.url).pathname.startsWith("/api/records")) return;
  event.respondWith((async () => {
    try {
      return await fetch(event.request.clone());
    } catch {
      await queue.pushRequest({ request: event.request });
      return Response.error();
    }
  })());
});

// What an app does when it believes it is back online (and what the test does, because
// headless Chromium may never fire `sync`): ask the worker to replay its queue.
self.addEventListener("message", (event) => {
  const port = event.ports[0];
  const answer = async () => {
    if (event.data?.type === "replay") {
      const ok = await replayOnce(queue).then(() => true, () => false);
      port?.postMessage({ ok, left: await queue.size() });
    } else if (event.data?.type === "size") {
      port?.postMessage({ left: await queue.size(), syncEvents });
    }
  };
  event.waitUntil(answer());
});
