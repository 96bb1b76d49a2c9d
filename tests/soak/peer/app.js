// The peer's app page: it sends each edit with fetch, through the service worker (sw.js),
// which queues what fails on the network in workbox-background-sync's Queue. The test
// drives edits through `window.peer` and hears answers through `peerReport` (exposed by the
// test). URL parameter: tab.
const tab = new URLSearchParams(location.search).get("tab");
const report = (ev) => (window.peerReport ? window.peerReport(ev).catch(() => {}) : undefined);

await navigator.serviceWorker.register("/peer/sw.js", { scope: "/peer/" });
if (!navigator.serviceWorker.controller) {
  await new Promise((ok) => navigator.serviceWorker.addEventListener("controllerchange", ok, { once: true }));
}

function ask(type) {
  return new Promise((ok) => {
    const ch = new MessageChannel();
    ch.port1.onmessage = (e) => ok(e.data);
    navigator.serviceWorker.controller.postMessage({ type }, [ch.port2]);
  });
}

window.peer = {
  /** Sends one operation and returns at once; the answer (or the failure) is reported. */
  send(op) {
    const headers = {
      Authorization: `Bearer ${op.owner}.peer`, "Idempotency-Key": op.id, "Content-Type": "application/json",
      "X-Peer-Tab": tab,
    };
    const url = op.kind === "create" ? `/api/records/${op.entity}` : `/api/records/${op.entity}/${op.serverId}`;
    fetch(url, { method: op.kind === "create" ? "POST" : "PUT", headers, body: JSON.stringify(op.body) }).then(
      async (res) => report({ type: "answer", id: op.id, status: res.status, body: await res.json().catch(() => null) }),
      () => report({ type: "failed", id: op.id }),
    );
  },
  /** Fire and forget, as an app's "online" handler would. */
  replay() { ask("replay"); },
  replayAndWait: () => ask("replay"),
  size: () => ask("size"),
  ready: true,
};
