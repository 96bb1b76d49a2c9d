#!/usr/bin/env node
// Shortens the names under which the wasm module imports the glue's JS functions (issue 35:
// −2.5 KB gzip) and exports its own. wasm-bindgen names each import `__wbg_<name>_<16 hex
// digits of hash>` under the module "./outbox_idb_bg.js"; the hashes do not compress, and
// there are about 150 of them. Only the import and export sections of
// pkg/outbox_idb_bg.wasm, the keys of the import object in pkg/outbox_idb.js (the one place
// that names them), the glue's `wasm.<export>` and the exports' types change, together
// (below). Run by scripts/build.sh after wasm-opt and glue-imports.mjs; fails, changing
// nothing, on a glue it cannot match.
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const pkg = join(dirname(fileURLToPath(import.meta.url)), "..", "pkg");
const wasmFile = join(pkg, "outbox_idb_bg.wasm");
const glueFile = join(pkg, "outbox_idb.js");
const GLUE_MODULE = "./outbox_idb_bg.js";
const SHORT_MODULE = "a";

function fail(why) {
  console.error(`minify-imports: ${why} (wasm-bindgen changed its output?)`);
  process.exit(1);
}

/** The i-th short name: a, b, …, Z, aa, ab, … (JS identifiers, none a reserved word). */
function shortName(i) {
  const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  let name = "";
  do {
    name = letters[i % letters.length] + name;
    i = Math.floor(i / letters.length) - 1;
  } while (i >= 0);
  return name;
}

const leb = (n) => {
  const out = [];
  do {
    let byte = n & 0x7f;
    n >>>= 7;
    if (n) byte |= 0x80;
    out.push(byte);
  } while (n);
  return Buffer.from(out);
};

const wasm = readFileSync(wasmFile);
let at = 0;
const readLeb = () => {
  let n = 0;
  let shift = 0;
  let byte;
  do {
    byte = wasm[at++];
    n += (byte & 0x7f) * 2 ** shift;
    shift += 7;
  } while (byte & 0x80);
  return n;
};
const readName = () => {
  const len = readLeb();
  at += len;
  return wasm.toString("utf8", at - len, at);
};

// The export section (id 7): every export renamed `a`, `b`, … (−0.3 KB gzip, 2026-12-07):
// the closures' entry points, named `wasm_bindgen__convert__closures_____invoke__<16 hex
// digits of hash>`, the methods (`outbox_flush`, …), wasm-bindgen's own (`__wbindgen_malloc`,
// `memory`, …). Only the glue uses them, as `wasm.<name>`: the package's `init` and
// `initSync` hand the app the exports as `unknown` (npm/index.d.ts), not as an API.
const exportsRenamed = new Map();
function exportSection(end) {
  const count = readLeb();
  const entries = [leb(count)];
  for (let i = 0; i < count; i++) {
    const name = readName();
    const kind = wasm[at++];
    const index = readLeb();
    if (exportsRenamed.has(name)) fail(`export ${name} twice`);
    const short = shortName(exportsRenamed.size);
    exportsRenamed.set(name, short);
    entries.push(leb(Buffer.byteLength(short)), Buffer.from(short), Buffer.from([kind]), leb(index));
  }
  if (at !== end) fail("export section not read to its end");
  const body = Buffer.concat(entries);
  return Buffer.concat([Buffer.from([7]), leb(body.length), body]);
}

// The import section (id 2), rewritten; every other section is copied as it is.
const renamed = new Map();
const parts = [wasm.subarray(0, 8)];
at = 8;
while (at < wasm.length) {
  const start = at;
  const id = wasm[at++];
  const size = readLeb();
  const end = at + size;
  if (id === 7) {
    parts.push(exportSection(end));
    continue;
  }
  if (id !== 2) {
    parts.push(wasm.subarray(start, end));
    at = end;
    continue;
  }
  const count = readLeb();
  const entries = [leb(count)];
  for (let i = 0; i < count; i++) {
    const module = readName();
    const name = readName();
    const descStart = at;
    const kind = wasm[at++];
    if (kind === 0) readLeb(); // a function: its type index
    else if (kind === 1 || kind === 2) {
      if (kind === 1) at++; // a table's element type
      const flags = wasm[at++];
      readLeb();
      if (flags & 1) readLeb();
    } else if (kind === 3) at += 2; // a global: value type, mutability
    else fail(`import kind ${kind} unknown`);
    const desc = wasm.subarray(descStart, at);
    let newModule = module;
    let newName = name;
    if (module === GLUE_MODULE) {
      newModule = SHORT_MODULE;
      newName = shortName(renamed.size);
      if (renamed.has(name)) fail(`import ${name} twice`);
      renamed.set(name, newName);
    }
    for (const text of [newModule, newName]) entries.push(leb(Buffer.byteLength(text)), Buffer.from(text));
    entries.push(desc);
  }
  if (at !== end) fail("import section not read to its end");
  const body = Buffer.concat(entries);
  parts.push(Buffer.from([2]), leb(body.length), body);
}
if (renamed.size === 0) fail(`no import from "${GLUE_MODULE}"`);

// The glue: each import is a key of `import0`, named once in the whole file.
let glue = readFileSync(glueFile, "utf8");
for (const [name, short] of renamed) {
  const key = `\n        ${name}: function(`;
  if (glue.split(name).length !== 2 || !glue.includes(key)) fail(`the glue does not name ${name} once, as a key`);
  glue = glue.replace(key, `\n        ${short}: function(`);
}
const moduleKey = `"${GLUE_MODULE}": import0,`;
if (glue.split(GLUE_MODULE).length !== 2 || !glue.includes(moduleKey)) fail(`the glue does not name "${GLUE_MODULE}" once`);
glue = glue.replace(moduleKey, `"${SHORT_MODULE}": import0,`);

// The glue names each export as `wasm.<name>` (a call, `wasm.memory.buffer`, …), all in one
// pass so that no new name is taken for an old one; afterwards every `wasm.<name>` it
// holds must be a new name, so none was missed.
const USE = /(?<![\w$.])wasm\.([\w$]+)/g;
glue = glue.replace(USE, (use, name) => (exportsRenamed.has(name) ? `wasm.${exportsRenamed.get(name)}` : use));
const shorts = new Set(exportsRenamed.values());
for (const [, name] of glue.matchAll(USE)) {
  if (!shorts.has(name)) fail(`the glue uses wasm.${name}, which is not an export`);
}

// Their types (`InitOutput` in the glue's types, and the module's own types) under the
// new names too: each declared once, as `<name>:`.
// (wasm-bindgen declares the exports that are functions, tables and the memory; the two
// globals of its runtime, `__abort_handler` and `__instance_terminated`, it does not.)
const types = [join(pkg, "outbox_idb.d.ts"), join(pkg, "outbox_idb_bg.wasm.d.ts")].map((f) => [f, readFileSync(f, "utf8")]);
for (const entry of types) {
  for (const [name, short] of exportsRenamed) {
    const declared = entry[1].split(` ${name}:`).length - 1;
    if (declared === 0 && name.startsWith("__") && !name.startsWith("__wbindgen") && !name.startsWith("__wbg")) continue;
    if (declared !== 1) fail(`${entry[0]} does not declare ${name} once`);
    entry[1] = entry[1].replace(` ${name}:`, ` ${short}:`);
  }
}

writeFileSync(wasmFile, Buffer.concat(parts));
writeFileSync(glueFile, glue);
for (const [f, text] of types) writeFileSync(f, text);
console.log(`[build] ${renamed.size} imports and ${exportsRenamed.size} exports renamed`);
