// The peer: the same POSTs through workbox-background-sync's `Queue` in a module-free
// service worker (bench/workbox-sw.js, bundled by the soak's `buildServiceWorker`). The
// Queue is filled with N requests (setup), then one `replayRequests()` is timed inside the
// worker: it sends them one at a time, as Workbox does, to the same origin and gate.
import { expect, type BrowserContext, type Page } from "@playwright/test";
import { resolve } from "node:path";
import { buildServiceWorker, type PeerOrigin } from "../../tests/soak/peer";
import { fresh, measure } from "./setup";

export const buildBenchWorker = (outDir: string) => buildServiceWorker(outDir, resolve("bench/workbox-sw.js"));

function ask(page: Page, msg: Record<string, unknown>): Promise<any> {
  return page.evaluate((msg) => new Promise((ok) => {
    const ch = new MessageChannel();
    ch.port1.onmessage = (e) => ok(e.data);
    navigator.serviceWorker.controller!.postMessage(msg, [ch.port2]);
  }), msg);
}

export async function replay(context: BrowserContext, origin: PeerOrigin, n: number, runs: number) {
  const page = await context.newPage();
  await page.goto(`${origin.url}/peer/app.html?tab=bench`);
  await page.waitForFunction(() => (window as any).peer?.ready === true);
  try {
    return await measure(runs, async () => {
      const run = fresh("wb");
      const filled = await ask(page, { type: "fill", owner: fresh("owner"), run, n });
      expect(filled.left, "the Queue holds the requests").toBe(n);
      const r = await ask(page, { type: "replay" });
      expect(r.ok && r.left === 0, "replayRequests() sent every request").toBe(true);
      // Workbox counts any HTTP answer as done; the gate must have created every one.
      const created = [...origin.answers].filter(([k, st]) => k.startsWith(`${run}-`) && st.length === 1 && st[0] === 201).length;
      expect(created, "the gate answered every request 201, once").toBe(n);
      return r.ms;
    });
  } finally {
    await page.close();
  }
}
