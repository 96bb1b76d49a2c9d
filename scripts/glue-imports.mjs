#!/usr/bin/env node
// Every JS function the wasm module imports without `catch`, checked against a reviewed list
// (scripts/glue-imports.allow). A JS exception thrown inside such an import unwinds through
// the wasm frames: no destructor runs, the shadow stack is not given back, the call never
// settles (crates/outbox-idb/src/js.rs). So each one must be unable to throw on what it is
// given — an intrinsic on a primitive, a property of a platform object — and a new one
// fails the build until someone has read it and said why in the list. It finds new
// imports, not new call sites of listed ones (imports with the same body share an entry):
// a new call of a listed import on a value the app controls needs the same reading.
//
//   node scripts/glue-imports.mjs          # checks pkg/outbox_idb.js
//   node scripts/glue-imports.mjs --print  # prints the current list, one key per line
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const glue = readFileSync(join(root, "pkg", "outbox_idb.js"), "utf8");

/**
 * The bodies (whitespace collapsed: the key) of the imports not wrapped in `handleError`.
 * Every entry of the import object is classified; one that cannot be read fails, so a
 * change in wasm-bindgen's output cannot let an import through unseen.
 */
function uncaughtImports(src) {
  const start = src.indexOf("const import0 = {");
  if (start < 0) throw new Error("glue-imports: no import object in pkg/outbox_idb.js (wasm-bindgen changed its output?)");
  const block = src.slice(start, src.indexOf("\n    };", start));
  const starts = [...block.matchAll(/^ {8}(\w+): function\(/gm)].map((m) => m.index);
  if (starts.length === 0) throw new Error("glue-imports: no import found in pkg/outbox_idb.js (wasm-bindgen changed its output?)");
  const before = block.slice(0, starts[0]).replace("const import0 = {", "").replace("__proto__: null,", "").trim();
  if (before !== "") throw new Error(`glue-imports: unexpected text before the first import: ${before.slice(0, 80)}`);
  const keys = new Set();
  starts.forEach((at, i) => {
    const entry = block.slice(at, starts[i + 1] ?? block.length).trim().replace(/,$/, "");
    const open = entry.match(/^\w+: function\([^)]*\) \{/);
    if (!open || !entry.endsWith("}")) throw new Error(`glue-imports: cannot read the import ${entry.slice(0, 80)}`);
    const body = entry.slice(open[0].length, -1).split("\n").map((l) => l.trim()).filter(Boolean).join(" ");
    if (body.startsWith("return handleError(function (") && body.endsWith("}, arguments);")) return;
    // wasm-bindgen's own runtime (casts of Rust values to JS: closures, numbers, strings;
    // the externref table's set-up): no JS API, no value of the app's.
    if (/^__wbindgen_(generic_\d+|init_externref_table): /.test(entry)) return;
    // A closure shim names its Rust function with a hash that changes with the code.
    keys.add(body.replace(/__h[0-9a-f]{16}/g, "__h"));
  });
  return keys;
}

/** The reviewed keys: one per line, `key  # why it cannot throw`; `#` lines are comments. */
function allowed(text) {
  const keys = new Map();
  for (const line of text.split("\n")) {
    if (line.trim() === "" || line.startsWith("#")) continue;
    const at = line.lastIndexOf("  # ");
    if (at < 0) throw new Error(`glue-imports.allow: no reason given ("  # why") on: ${line}`);
    keys.set(line.slice(0, at).trim(), line.slice(at + 4).trim());
  }
  return keys;
}

const found = uncaughtImports(glue);
if (process.argv.includes("--print")) {
  console.log([...found].sort().join("\n"));
  process.exit(0);
}
const list = allowed(readFileSync(join(root, "scripts", "glue-imports.allow"), "utf8"));
const unreviewed = [...found].filter((k) => !list.has(k)).sort();
const gone = [...list.keys()].filter((k) => !found.has(k));
if (gone.length > 0) console.log(`[build] no longer imported (remove from the list): \n  ${gone.join("\n  ")}`);
if (unreviewed.length > 0) {
  console.error(
    `[build] imports without catch that nobody reviewed (a JS exception in one crosses the wasm frames; ` +
      `bind it with catch, see crates/outbox-idb/src/js.rs, or add it to scripts/glue-imports.allow with why it cannot throw):\n  ` +
      unreviewed.join("\n  "),
  );
  process.exit(1);
}
console.log(`[build] imports without catch: ${found.size}, each reviewed in scripts/glue-imports.allow`);
