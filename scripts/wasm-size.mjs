#!/usr/bin/env node
// The size budget of the npm package's wasm (issue 12): prints the size of
// pkg/outbox_idb_bg.wasm, raw and gzip -9 (node's zlib at level 9), and fails above the
// budget. The budget is the size reached, plus a small margin: lower it when the module
// shrinks, never raise it to make a change pass — find what grew instead (README of
// issue 12: `twiggy top` on a build with its name section).
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

const BUDGET_GZIP_BYTES = 186_000;

const file = join(dirname(fileURLToPath(import.meta.url)), "..", "pkg", "outbox_idb_bg.wasm");
const wasm = readFileSync(file);
const gzip = gzipSync(wasm, { level: 9 }).length;
console.log(`[build] wasm size: ${wasm.length} bytes, ${gzip} gzipped (budget ${BUDGET_GZIP_BYTES} gzipped)`);
if (gzip > BUDGET_GZIP_BYTES) {
  console.error(
    `[build] pkg/outbox_idb_bg.wasm is ${gzip} bytes gzipped, over its budget of ${BUDGET_GZIP_BYTES} ` +
      `by ${gzip - BUDGET_GZIP_BYTES}: something made the module bigger (see scripts/wasm-size.mjs)`,
  );
  process.exit(1);
}
