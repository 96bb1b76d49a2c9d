import { defineConfig } from "@playwright/test";

// Debian's Chromium, never a downloaded browser. Pages of one context share one origin and
// so one IndexedDB: that is how two "tabs" are made.
const PORT = Number(process.env.GATE_PORT ?? 8788);

export default defineConfig({
  testDir: "tests/e2e",
  timeout: 60_000,
  expect: { timeout: 10_000 },
  fullyParallel: true,
  workers: 2,
  retries: 0,
  reporter: [["list"]],
  outputDir: "test-results/artifacts",
  use: {
    baseURL: `http://127.0.0.1:${PORT}`,
    launchOptions: {
      executablePath: "/usr/bin/chromium",
      args: [
        "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
      ],
    },
  },
  webServer: {
    // The demo server serves the demo app, the built package and the API (in-memory ledger,
    // asked for by name; --test-endpoints: the tests read /api/effects).
    command: `target/release/outbox-gate --addr 127.0.0.1:${PORT} --db :memory: --test-endpoints --www www --pkg pkg`,
    url: `http://127.0.0.1:${PORT}/`,
    reuseExistingServer: false,
    timeout: 60_000,
  },
});
