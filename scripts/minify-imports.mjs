#!/usr/bin/env node
// Shortens the names under which the wasm module imports the glue's JS functions (issue 35:
// −2.5 KB gzip). wasm-bindgen names each import `__wbg_<name>_<16 hex digits of hash>`
// under the module "./outbox_idb_bg.js"; the hashes do not compress, and there are about
// 150 of them. Only the import section of pkg/outbox_idb_bg.wasm and the keys of the import
// object in pkg/outbox_idb.js (the one place that names them) change, together; the
// exports keep their names (`initSync` returns them), except the closures' entry points,
// named after hashes too (below). Run by scripts/build.sh after
// wasm-opt and glue-imports.mjs; fails, changing nothing, on a glue it cannot match.
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

// The export section (id 7): the closures' entry points wasm-bindgen exports under
// `wasm_bindgen__convert__closures_____invoke__<16 hex digits of hash>` (about 6; the
// hashes do not compress either) renamed `c0`, `c1`, …; the glue calls them as
// `wasm.<name>(` and nothing else knows them (their names change with every build). The
// other exports keep their names.
const CLOSURE_EXPORT = "wasm_bindgen__convert__closures_____invoke__";
const exportsRenamed = new Map();
function exportSection(end) {
  const count = readLeb();
  const entries = [leb(count)];
  for (let i = 0; i < count; i++) {
    let name = readName();
    const kind = wasm[at++];
    const index = readLeb();
    if (name.startsWith(CLOSURE_EXPORT)) {
      const short = `c${exportsRenamed.size}`;
      exportsRenamed.set(name, short);
      name = short;
    }
    entries.push(leb(Buffer.byteLength(name)), Buffer.from(name), Buffer.from([kind]), leb(index));
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

// The glue calls each renamed export as `wasm.<name>(`, and names it no other way.
for (const [name, short] of exportsRenamed) {
  const uses = glue.match(new RegExp(`wasm\\.${name}(?![\\w$])`, "g")) ?? [];
  const calls = glue.split(`wasm.${name}(`).length - 1;
  if (calls === 0 || uses.length !== calls) fail(`the glue uses wasm.${name} other than as a call`);
  glue = glue.replaceAll(`wasm.${name}(`, `wasm.${short}(`);
}
for (const short of exportsRenamed.values()) {
  if (renamed.has(short)) fail(`${short} named twice`);
}

// Their types (`InitOutput` in the glue's types, and the module's own types) under the
// new names too: each declared once, as `<name>:`.
const types = [join(pkg, "outbox_idb.d.ts"), join(pkg, "outbox_idb_bg.wasm.d.ts")].map((f) => [f, readFileSync(f, "utf8")]);
for (const entry of types) {
  for (const [name, short] of exportsRenamed) {
    if (entry[1].split(` ${name}:`).length !== 2) fail(`${entry[0]} does not declare ${name} once`);
    entry[1] = entry[1].replace(` ${name}:`, ` ${short}:`);
  }
}

writeFileSync(wasmFile, Buffer.concat(parts));
writeFileSync(glueFile, glue);
for (const [f, text] of types) writeFileSync(f, text);
console.log(`[build] ${renamed.size} imports and ${exportsRenamed.size} closure exports renamed`);
