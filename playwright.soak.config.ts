import { defineConfig } from "@playwright/test";
import base from "./playwright.config";

// The seeded soak (tests/soak): one long test that launches its own persistent Chromium
// profile (so that it can SIGKILL the browser and relaunch it on the same profile), against
// its own gate. SOAK_OPS sets the size, SOAK_SEED replays a schedule; see scripts/soak.sh.
const PORT = Number(process.env.GATE_PORT ?? 8791);

export default defineConfig({
  ...base,
  testDir: "tests/soak",
  testMatch: "*.soak.ts",
  timeout: Number(process.env.SOAK_TIMEOUT_MS ?? 30 * 60_000),
  workers: 1,
  fullyParallel: false,
  // Its own output folder (it holds the browser profile): the e2e suite empties its own.
  outputDir: "test-results/soak",
  use: { ...base.use, baseURL: `http://127.0.0.1:${PORT}` },
  webServer: {
    command: `target/release/outbox-gate --addr 127.0.0.1:${PORT} --db :memory: --test-endpoints --www www --pkg pkg --processing-lease-ms 5000`,
    url: `http://127.0.0.1:${PORT}/`,
    reuseExistingServer: false,
    timeout: 60_000,
  },
});
