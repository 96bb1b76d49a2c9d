import { defineConfig } from "@playwright/test";
import bench from "./playwright.bench.config";

// bench/timeline.trace.ts: the timeline of one flush (not part of scripts/bench.sh).
export default defineConfig({ ...bench, testMatch: "*.trace.ts" });
