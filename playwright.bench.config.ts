import { defineConfig } from "@playwright/test";
import base from "./playwright.config";

// Benchmarks print figures; they assert nothing about time (machines are noisy). With AB_PKG
// set, only the A/B of two packages runs (bench/ab.compare.ts).
export default defineConfig({ ...base, testDir: "bench", testMatch: process.env.AB_PKG ? "ab.compare.ts" : "*.bench.ts", timeout: 600_000, workers: 1, fullyParallel: false });
