// The peer's plumbing: its service worker bundled at test time, and the origin its pages
// live on. That origin is a small server in the test process: it serves the peer's page and
// service worker and passes /api/* on to the soak's gate, injecting the faults on the way.
// Faults are injected here rather than with Playwright's routes (as the soak does for its
// own pages) because the requests that matter are the service worker's own fetches; a
// server in the middle sees them all, whichever context sends them, and can really drop a
// connection after the gate committed.
import { build } from "vite";
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from "node:http";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { AddressInfo } from "node:net";

const PEER_DIR = resolve("tests/soak/peer");

export const WORKBOX_VERSION: string = JSON.parse(
  readFileSync(resolve("node_modules/workbox-background-sync/package.json"), "utf8"),
).version;

/**
 * Bundles a service worker (tests/soak/peer/sw.js unless `entry` names another, e.g. the
 * benchmark's) with workbox-background-sync (production build) into `outDir`/sw.js.
 */
export async function buildServiceWorker(outDir: string, entry = join(PEER_DIR, "sw.js")): Promise<void> {
  await build({
    configFile: false,
    logLevel: "warn",
    define: { "process.env.NODE_ENV": JSON.stringify("production") },
    build: {
      outDir,
      emptyOutDir: true,
      minify: false,
      lib: { entry, formats: ["iife"], name: "peerSw", fileName: () => "sw.js" },
    },
  });
}

/** The gate's answer to a request passed on. */
export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** One request to /api/records as it reaches the peer's origin. */
export interface Wire {
  key: string;
  /** X-Peer-Tab of the request: the tab whose fetch created it (a replay keeps it). */
  tab: string;
  /** The key was seen on the wire before: this is the queue replaying it. */
  replay: boolean;
  /** Passes the request on to the gate and waits for the whole answer. */
  forward(): Promise<Answer | null>;
  /** Sends an answer to the browser (nothing if its connection is gone). */
  deliver(a: Answer | null): void;
  /** Drops the connection: the browser's fetch fails with a network error. */
  drop(): void;
  /** The browser's side of the connection closed before an answer went out. */
  gone(): boolean;
}

export interface PeerOrigin {
  url: string;
  /** Decides what happens to each /api/records request; the default passes it on. */
  onRecords: (w: Wire) => Promise<void>;
  /** Keys seen on the wire, with how often, and how often the gate answered from its ledger. */
  attempts: Map<string, number>;
  /** The gate's status codes per key, for every answer it gave (delivered or not). */
  answers: Map<string, number[]>;
  replayedByGate: number;
  close(): Promise<void>;
}

export async function startPeerOrigin(gate: string, swDir: string, port = 0): Promise<PeerOrigin> {
  const target = new URL(gate);
  const origin: PeerOrigin = {
    url: "",
    onRecords: async (w) => w.deliver(await w.forward()),
    attempts: new Map(),
    answers: new Map(),
    replayedByGate: 0,
    close: async () => {},
  };

  function pass(req: IncomingMessage, body: Buffer): Promise<Answer | null> {
    return new Promise((ok) => {
      const headers = { ...req.headers, host: target.host };
      delete headers.connection;
      const out = httpRequest(
        { host: target.hostname, port: target.port, method: req.method, path: req.url, headers },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c) => chunks.push(c));
          res.on("end", () => {
            if (res.headers["idempotent-replayed"] === "true") origin.replayedByGate++;
            ok({ status: res.statusCode ?? 502, headers: res.headers, body: Buffer.concat(chunks) });
          });
          res.on("error", () => ok(null));
        },
      );
      out.on("error", () => ok(null));
      out.end(body);
    });
  }

  function send(res: ServerResponse, a: Answer | null) {
    if (res.destroyed || res.writableEnded) return;
    if (!a) return void res.socket?.destroy();
    const headers = { ...a.headers };
    delete headers["transfer-encoding"];
    delete headers["keep-alive"];
    // A fresh connection per request: Chromium resends a request by itself when a reused
    // keep-alive connection closes without an answer; a dropped answer must reach the app.
    headers.connection = "close";
    headers["content-length"] = String(a.body.length);
    res.writeHead(a.status, headers);
    res.end(a.body);
  }

  function serveFile(res: ServerResponse, path: string, type: string) {
    try {
      const body = readFileSync(path);
      res.writeHead(200, { "content-type": type, "cache-control": "no-cache", connection: "close" });
      res.end(body);
    } catch {
      res.writeHead(404, { connection: "close" });
      res.end();
    }
  }

  const server = createServer((req, res) => {
    res.on("error", () => {});
    req.on("error", () => {});
    const path = new URL(req.url ?? "/", "http://x").pathname;
    if (path === "/peer/sw.js") return serveFile(res, join(swDir, "sw.js"), "text/javascript");
    if (path === "/peer/app.js") return serveFile(res, join(PEER_DIR, "app.js"), "text/javascript");
    if (path === "/peer/app.html") return serveFile(res, join(PEER_DIR, "app.html"), "text/html");
    const chunks: Buffer[] = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      if (!path.startsWith("/api/records")) return void pass(req, body).then((a) => send(res, a));
      const key = String(req.headers["idempotency-key"] ?? "");
      const seen = origin.attempts.get(key) ?? 0;
      origin.attempts.set(key, seen + 1);
      let closed = false;
      res.on("close", () => (closed = !res.writableEnded));
      const wire: Wire = {
        key,
        tab: String(req.headers["x-peer-tab"] ?? ""),
        replay: seen > 0,
        forward: async () => {
          const a = await pass(req, body);
          if (a) origin.answers.set(key, [...(origin.answers.get(key) ?? []), a.status]);
          return a;
        },
        deliver: (a) => send(res, a),
        drop: () => void req.socket.destroy(),
        gone: () => closed || res.destroyed,
      };
      origin.onRecords(wire).catch(() => wire.drop());
    });
  });
  await new Promise<void>((ok) => server.listen(port, "127.0.0.1", ok));
  origin.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  origin.close = () => new Promise<void>((ok) => {
    server.closeAllConnections();
    server.close(() => ok());
  });
  return origin;
}
