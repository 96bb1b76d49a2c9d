#!/usr/bin/env node
// Where the wasm module's bytes are (issue 35): the module of the last release build
// (target/wasm32-unknown-unknown/release/outbox_idb.wasm), through wasm-bindgen and wasm-opt
// as scripts/build.sh makes pkg/, but keeping the function names, read by twiggy. Prints
// the bytes by crate and the largest functions. The figures are raw bytes of the optimized
// module before gzip (pkg/'s module is the same code without its names); shares of the
// gzip figure are close to these shares, not equal.
//   node scripts/wasm-breakdown.mjs [top]   top: how many functions to list (default 15)
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const MODULE = "target/wasm32-unknown-unknown/release/outbox_idb.wasm";
const top = Number(process.argv[2] ?? 15);
if (!existsSync(MODULE)) {
  console.error(`wasm-breakdown: ${MODULE} is missing: run scripts/build.sh first`);
  process.exit(1);
}
const dir = mkdtempSync(join(tmpdir(), "wasm-breakdown-"));
const run = (cmd, args) => execFileSync(cmd, args, { encoding: "utf8", maxBuffer: 64 << 20 });
try {
  run("wasm-bindgen", [MODULE, "--out-dir", dir, "--target", "web", "--keep-debug"]);
  const named = join(dir, "named.wasm");
  // -g keeps the name section through the passes; the passes are build.sh's, without
  // --converge (a few more bytes, half a minute less).
  run("npx", ["wasm-opt", "-Os", "--flatten", "--rereloop", "-Os", "--flatten", "--rereloop", "-Os", "-Os", "-g", join(dir, "outbox_idb_bg.wasm"), "-o", named]);
  const items = JSON.parse(run("twiggy", ["top", "-n", "1000000", "--format", "json", named]));
  const code = items.filter((i) => !/^"?(function names|local names|.*subsection)/.test(i.name) && i.name !== "custom section 'name'");
  const total = code.reduce((sum, i) => sum + i.shallow_size, 0);
  const byCrate = new Map();
  for (const item of code) {
    const crate = crateOf(item.name);
    byCrate.set(crate, (byCrate.get(crate) ?? 0) + item.shallow_size);
  }
  const pct = (b) => `${((100 * b) / total).toFixed(1).padStart(5)} %`;
  const kb = (b) => `${(b / 1000).toFixed(1).padStart(6)} KB`;
  console.log(`\nwasm module by crate (raw bytes after wasm-opt, names kept; ${kb(total).trim()} of code and data):`);
  for (const [crate, bytes] of [...byCrate].sort((a, b) => b[1] - a[1]).slice(0, 14)) {
    console.log(`  ${kb(bytes)} ${pct(bytes)}  ${crate}`);
  }
  console.log(`\nlargest ${top} functions and data:`);
  for (const item of code.sort((a, b) => b.shallow_size - a.shallow_size).slice(0, top)) {
    console.log(`  ${kb(item.shallow_size)} ${pct(item.shallow_size)}  ${item.name.replace(/::h[0-9a-f]{16}$/, "").slice(0, 110)}`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

/** The crate a symbol belongs to: `outbox_idb::…`, `<alloc::vec::Vec<T> as …>` → alloc. */
function crateOf(name) {
  if (name.startsWith("data")) return "data (strings and tables)";
  if (name.startsWith("import ") || name.startsWith("export ") || name.startsWith("elem")) return "imports, exports, tables";
  // wasm-bindgen's glue of each exported function, with what wasm-opt inlined into it.
  if (/ shim$/.test(name)) return "export shims (and what they inline)";
  if (/^<(char|str|bool|[iuf](8|16|32|64|128|size))( as |>)/.test(name)) return "core";
  const m = /^[<&*\s]*(?:const |mut |dyn )?([a-z_][a-z0-9_]*)(?:\[[0-9a-f]+\])?::/.exec(name);
  return m ? m[1] : "other";
}
