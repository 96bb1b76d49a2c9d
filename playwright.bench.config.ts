import { defineConfig } from "@playwright/test";
import base from "./playwright.config";

// Benchmarks print figures; they assert nothing about time (machines are noisy).
export default defineConfig({ ...base, testDir: "bench", testMatch: "*.bench.ts", timeout: 600_000, workers: 1, fullyParallel: false });
