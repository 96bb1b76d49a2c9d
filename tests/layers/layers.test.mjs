// The layer check itself (scripts/layers.mjs, issue 33): it passes a crate whose modules
// only use their own layer or the ones below, and fails one with an upward use, with a
// cycle, or with a module in no layer. Run: node --test tests/layers/
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { check } from "../../scripts/layers.mjs";

/** A crate in a temporary folder: `files` maps a path under src/ to its text. */
function crate(files, layers) {
  const dir = mkdtempSync(join(tmpdir(), "layers-"));
  for (const [path, text] of Object.entries(files)) {
    const full = join(dir, "src", path);
    mkdirSync(join(full, ".."), { recursive: true });
    writeFileSync(full, text);
  }
  writeFileSync(join(dir, "layers.txt"), layers);
  return dir;
}

const LAYERS = "data: row plan\nrules: claim\nmachine: flush::*\nsurface: crate\n";
const clean = {
  "lib.rs": "pub mod row; pub mod plan; pub mod claim; pub mod flush;\npub use flush::Flush;\n",
  "row.rs": "pub struct Row;\n",
  "plan.rs": "use crate::row::Row;\npub struct Plan(Row);\n",
  "claim.rs": "use crate::{plan::Plan, row::Row};\npub fn claim(_: Row) -> Option<Plan> { None }\n",
  "flush/mod.rs": "mod batch;\nuse batch::Batch;\npub struct Flush(Batch);\n",
  "flush/batch.rs": "use crate::claim::claim;\npub(super) struct Batch;\n#[cfg(test)]\nmod tests {\n    use crate::Flush;\n}\n",
};

test("a crate whose uses all point down passes", () => {
  assert.deepEqual(check(crate(clean, LAYERS)).problems, []);
});

test("a use of a layer above fails, named", () => {
  const up = { ...clean, "row.rs": "use crate::claim::claim;\npub struct Row;\n" };
  const { problems } = check(crate(up, LAYERS));
  assert.ok(problems.some((p) => p.includes("row (data) uses claim (rules), a layer above it")), problems.join("\n"));
});

test("an upward use written inline, or through super::, fails too", () => {
  const inline = { ...clean, "plan.rs": "pub struct Plan(crate::flush::Flush);\n" };
  assert.ok(check(crate(inline, LAYERS)).problems.some((p) => p.includes("plan (data) uses flush (machine)")));
  const viaSuper = { ...clean, "flush/batch.rs": "use super::Flush;\npub(super) struct Batch;\n" };
  assert.ok(check(crate(viaSuper, LAYERS)).problems.some((p) => p.includes("import cycle between flush, flush::batch")));
});

test("two modules of one layer that use each other are a cycle", () => {
  const cyc = { ...clean, "row.rs": "use crate::plan::Plan;\npub struct Row;\n" };
  const { problems } = check(crate(cyc, LAYERS));
  assert.ok(problems.some((p) => p.includes("import cycle between plan, row")), problems.join("\n"));
});

test("a module in no layer fails", () => {
  const extra = { ...clean, "metrics.rs": "pub struct M;\n" };
  const { problems } = check(crate(extra, LAYERS));
  assert.ok(problems.some((p) => p.includes("module metrics is in no layer")), problems.join("\n"));
});

test("the crate root re-exporting a name is the surface: using it from below points up", () => {
  const viaRoot = { ...clean, "claim.rs": "use crate::Flush;\npub fn claim() {}\n" };
  assert.ok(check(crate(viaRoot, LAYERS)).problems.some((p) => p.includes("claim (rules) uses crate (surface)")));
});
