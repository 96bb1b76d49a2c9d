#!/usr/bin/env node
// The layer check (issue 33): a crate's modules are placed in layers, written down once in
// its `layers.txt`; a module may use modules of its own layer or of layers below it, never
// one above, and no two modules may use each other, directly or through others (a cycle).
//
//   node scripts/layers.mjs                 checks crates/outbox-core and crates/outbox-idb
//   node scripts/layers.mjs CRATE_DIR ...   checks those crates (each with src/ and layers.txt)
//
// layers.txt, bottom layer first, one line a layer:
//   name: module module::child dir::*
// `dir::*` places a directory module and every module below it. Every module of src/ must
// be placed. What counts as a use: `use crate::…`, `crate::…` in code, and `super::…`
// (resolved to the module it names); the longest module path that exists is the one used.
// Unit tests (`#[cfg(test)]` to the end of a file) are not part of the layers.
//
// Exits 1 with one line per upward use, cycle or unplaced module; prints the layers when
// all is well.
import { readFileSync, readdirSync, statSync, existsSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";

/** Module path of a source file: `flush/mod.rs` → `flush`, `lib.rs` → `crate`. */
function moduleOf(rel) {
  const parts = rel.replace(/\.rs$/, "").split(sep);
  if (parts[parts.length - 1] === "mod") parts.pop();
  if (parts.length === 1 && (parts[0] === "lib" || parts[0] === "main")) return "crate";
  return parts.join("::");
}

function sources(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...sources(p));
    else if (name.endsWith(".rs")) out.push(p);
  }
  return out;
}

/** The code of a file without its unit tests and comments. */
function code(text) {
  const cut = text.search(/^#\[cfg\(test\)\]\s*\n\s*mod\s/m);
  const body = cut >= 0 ? text.slice(0, cut) : text;
  return body
    .split("\n")
    .map((l) => l.replace(/\/\/.*$/, ""))
    .join("\n");
}

/** Every module path a file's code names, resolved against the crate's modules. */
function usesOf(mod, text, modules) {
  const found = new Set();
  const longest = (path) => {
    const parts = path.split("::");
    for (let n = parts.length; n > 0; n--) {
      const cand = parts.slice(0, n).join("::");
      if (modules.has(cand)) return cand;
    }
    return "crate"; // a name the crate root defines or re-exports
  };
  const parentOf = (m) => (m.includes("::") ? m.slice(0, m.lastIndexOf("::")) : "crate");
  const expand = (prefix, rest) => {
    // `a::{b, c::d}` → `a::b`, `a::c::d` (one level of braces is all this code uses).
    const brace = rest.match(/^((?:\w+::)*)\{([^}]*)\}/);
    if (brace) {
      return brace[2]
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean)
        .map((s) => prefix + brace[1] + s.split(/\s/)[0]);
    }
    return [prefix + rest.match(/^(?:\w+::)*\w+/)?.[0]];
  };
  const body = code(text);
  for (const m of body.matchAll(/\bcrate::((?:\w+::)*(?:\w+|\{[^}]*\}))/g)) {
    for (const p of expand("", m[1])) if (p) found.add(longest(p));
  }
  for (const m of body.matchAll(/\b((?:super::)+)((?:\w+::)*(?:\w+|\{[^}]*\}))/g)) {
    let base = mod;
    for (let i = 0; i < m[1].length / 7; i++) base = parentOf(base);
    for (const p of expand("", m[2])) {
      if (!p) continue;
      found.add(longest(base === "crate" ? p : `${base}::${p}`));
    }
  }
  // `use child::…` and `self::child::…`: a module's own children, named from inside it.
  const own = (name) => (mod === "crate" ? name : `${mod}::${name}`);
  for (const m of body.matchAll(/\buse\s+(?:self::)?((?:\w+::)*(?:\w+|\{[^}]*\}))/g)) {
    for (const p of expand("", m[1])) {
      const first = p?.split("::")[0];
      if (first && !["crate", "super", "self", "std", "core", "alloc"].includes(first) && modules.has(own(first))) {
        found.add(longest(own(p)));
      }
    }
  }
  found.delete(mod);
  return found;
}

function layersOf(file) {
  const layers = [];
  for (const raw of readFileSync(file, "utf8").split("\n")) {
    const line = raw.replace(/#.*$/, "").trim();
    if (!line) continue;
    const at = line.indexOf(":");
    const [name, mods] = [line.slice(0, at).trim(), line.slice(at + 1).trim()];
    layers.push({ name, mods: mods.split(/\s+/).filter(Boolean) });
  }
  return layers;
}

/** Checks one crate; returns its problems, one line each. */
export function check(crateDir) {
  const src = join(crateDir, "src");
  const files = sources(src);
  const modules = new Map(files.map((f) => [moduleOf(relative(src, f)), f]));
  const layers = layersOf(join(crateDir, "layers.txt"));
  const layerOf = (mod) => {
    for (let i = 0; i < layers.length; i++) {
      for (const m of layers[i].mods) {
        if (m === mod || (m.endsWith("::*") && (mod === m.slice(0, -3) || mod.startsWith(m.slice(0, -1))))) return i;
      }
    }
    return -1;
  };
  const problems = [];
  const graph = new Map();
  for (const [mod, file] of modules) {
    const at = layerOf(mod);
    if (at < 0) problems.push(`${crateDir}: module ${mod} is in no layer of layers.txt`);
    const uses = usesOf(mod, readFileSync(file, "utf8"), new Set(modules.keys()));
    graph.set(mod, uses);
    for (const u of uses) {
      const to = layerOf(u);
      if (at >= 0 && to > at) {
        problems.push(`${crateDir}: ${mod} (${layers[at].name}) uses ${u} (${layers[to].name}), a layer above it`);
      }
    }
  }
  // Cycles: Tarjan's strongly connected components of more than one module.
  let index = 0;
  const idx = new Map(), low = new Map(), stack = [], on = new Set();
  const visit = (v) => {
    idx.set(v, index); low.set(v, index); index++;
    stack.push(v); on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!idx.has(w)) { visit(w); low.set(v, Math.min(low.get(v), low.get(w))); }
      else if (on.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)));
    }
    if (low.get(v) === idx.get(v)) {
      const comp = [];
      let w;
      do { w = stack.pop(); on.delete(w); comp.push(w); } while (w !== v);
      if (comp.length > 1) problems.push(`${crateDir}: import cycle between ${comp.sort().join(", ")}`);
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) visit(v);
  return { problems, layers, modules: [...modules.keys()] };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = join(fileURLToPath(import.meta.url), "..", "..");
  const crates = process.argv.length > 2 ? process.argv.slice(2) : ["crates/outbox-core", "crates/outbox-idb"].map((c) => join(root, c));
  let failed = false;
  for (const c of crates) {
    if (!existsSync(join(c, "layers.txt"))) { console.error(`${c}: no layers.txt`); failed = true; continue; }
    const { problems, layers, modules } = check(c);
    for (const p of problems) console.error(p);
    if (problems.length) failed = true;
    else console.log(`${relative(root, c) || c}: ${modules.length} modules in ${layers.length} layers (${layers.map((l) => l.name).join(" < ")}), no upward use, no cycle`);
  }
  process.exit(failed ? 1 : 0);
}
