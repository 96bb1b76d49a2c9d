import { defineConfig } from "@playwright/test";
import base from "../../playwright.config";

// The consumer app's production build (dist/, made by run.sh from the packed tarball),
// served by `vite preview` on loopback. Debian's Chromium with the main suite's flags.
const PORT = Number(process.env.CONSUMER_PORT ?? 8796);

export default defineConfig({
  testDir: ".",
  testMatch: "consumer.spec.ts",
  timeout: 60_000,
  expect: { timeout: 10_000 },
  workers: 1,
  retries: 0,
  reporter: [["list"]],
  outputDir: "../../test-results/consumer",
  use: { baseURL: `http://127.0.0.1:${PORT}`, launchOptions: base.use?.launchOptions },
  webServer: {
    command: `node ../../node_modules/vite/bin/vite.js preview --host 127.0.0.1 --port ${PORT} --strictPort`,
    cwd: ".",
    url: `http://127.0.0.1:${PORT}/`,
    reuseExistingServer: false,
    timeout: 60_000,
  },
});
