#!/usr/bin/env node
// What `npm pack ./pkg` ships, checked as a registry user would receive it: exactly the
// entry point, the glue, the types, the wasm, the manifest, the README and both license
// texts; a README whose links stay inside the package; a manifest without placeholders.
// Also: packing refuses when the build is missing or incomplete, and packing the
// repository root (not the package) refuses.
import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import assert from "node:assert/strict";
import { test } from "node:test";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const pkg = join(root, "pkg");
const npm = process.platform === "win32" ? "npm.cmd" : "npm";

const SHIPPED = [
  "LICENSE-APACHE",
  "LICENSE-MIT",
  "README.md",
  "configure.js",
  "errors.js",
  "index.d.ts",
  "index.js",
  "inspector.d.ts",
  "inspector.js",
  "live.js",
  "outbox_idb.d.ts",
  "outbox_idb.js",
  "outbox_idb_bg.wasm",
  "outbox_idb_bg.wasm.d.ts",
  "package.json",
  "react.d.ts",
  "react.js",
  "schedule.js",
  "transport.js",
];

function packDryRun(dir) {
  const out = execFileSync(npm, ["pack", "--dry-run", "--json", "--ignore-scripts"], { cwd: dir, encoding: "utf8" });
  return JSON.parse(out)[0];
}

test("the tarball holds the package's files and nothing else", () => {
  const packed = packDryRun(pkg);
  assert.deepEqual(packed.files.map((f) => f.path).sort(), SHIPPED);
  assert.equal(packed.name, "tab-outbox");
  const wasm = packed.files.find((f) => f.path === "outbox_idb_bg.wasm");
  assert.ok(wasm.size > 50_000, `the wasm is ${wasm.size} bytes: not a real build`);
});

test("the manifest: license texts for its license field, entry points that exist, the crate's version", () => {
  const manifest = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8"));
  assert.equal(manifest.license, "MIT OR Apache-2.0");
  assert.match(readFileSync(join(pkg, "LICENSE-MIT"), "utf8"), /^MIT License/);
  const apache = readFileSync(join(pkg, "LICENSE-APACHE"), "utf8");
  assert.match(apache, /Apache License\s+Version 2\.0, January 2004/);
  assert.match(apache, /END OF TERMS AND CONDITIONS/);
  assert.deepEqual(manifest.exports["."], { types: "./index.d.ts", default: "./index.js" });
  for (const f of [manifest.main, manifest.types, manifest.exports["./outbox_idb_bg.wasm"]]) {
    assert.ok(SHIPPED.includes(f.replace(/^\.\//, "")), `${f} is not shipped`);
  }
  const cargo = readFileSync(join(root, "Cargo.toml"), "utf8");
  assert.equal(manifest.version, /\[workspace\.package\][^[]*?version = "([^"]+)"/.exec(cargo)[1]);
  // No placeholder left in the fields a registry shows.
  assert.doesNotMatch(JSON.stringify(manifest), /example\.(com|org)|TODO|<[a-z-]+>|your-?(org|name)/i);
});

test("every module the shipped JS imports is shipped (the crate's own JS is put into the glue)", () => {
  for (const file of SHIPPED.filter((f) => f.endsWith(".js"))) {
    const src = readFileSync(join(pkg, file), "utf8");
    const specs = [...src.matchAll(/^\s*(?:import|export)\b[^'"]*?from\s*["']([^"']+)["']|\bimport\(\s*["']([^"']+)["']\s*\)/gm)];
    for (const m of specs) {
      const spec = m[1] ?? m[2];
      if (!spec.startsWith(".")) continue;
      const target = join(dirname(file), spec).replace(/^\.\//, "");
      assert.ok(SHIPPED.includes(target), `${file} imports ${spec}, which is not in the package`);
    }
  }
});

test("every link of the shipped README stays inside the package", () => {
  const readme = readFileSync(join(pkg, "README.md"), "utf8");
  const links = [...readme.matchAll(/\[[^\]]*\]\(([^)\s]+)[^)]*\)/g)].map((m) => m[1]);
  const refs = [...readme.matchAll(/^\s*\[[^\]]+\]:\s*(\S+)/gm)].map((m) => m[1]);
  const bare = [...readme.matchAll(/<(https?:[^>]+)>|(?<![(<])\bhttps?:\/\/\S+/g)].map((m) => m[1] ?? m[0]);
  for (const link of [...links, ...refs, ...bare]) {
    if (link.startsWith("#")) continue;
    assert.ok(!/^[a-z]+:/i.test(link) && !link.startsWith("/"), `the README links outside the package: ${link}`);
    const file = link.split("#")[0].replace(/^\.\//, "");
    assert.ok(SHIPPED.includes(file), `the README links to ${file}, which is not in the package`);
  }
});

test("packing refuses when the build is incomplete, and at the repository root", () => {
  const dir = mkdtempSync(join(tmpdir(), "outbox-pack-"));
  try {
    cpSync(pkg, dir, { recursive: true });
    rmSync(join(dir, "outbox_idb_bg.wasm"));
    const r = spawnSync(npm, ["pack", "--dry-run"], { cwd: dir, encoding: "utf8" });
    assert.notEqual(r.status, 0, "npm pack of a package without its wasm succeeded");
    assert.match(r.stderr, /missing outbox_idb_bg\.wasm/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const atRoot = spawnSync(npm, ["pack", "--dry-run"], { cwd: root, encoding: "utf8" });
  assert.notEqual(atRoot.status, 0, "npm pack at the repository root succeeded");
  assert.match(atRoot.stderr, /npm pack \.\/pkg/);
});
