#!/usr/bin/env node
// Puts the crate's own JS modules (`#[wasm_bindgen(module = "/src/…")]`: the value walk,
// crates/outbox-idb/src/convert/walk.js), which wasm-bindgen copies to
// pkg/snippets/<crate>-<hash>/ and imports from the glue, into the glue itself
// (pkg/outbox_idb.js): the package stays the files its manifest lists (no directory named by
// a hash) and a page loads one module fewer. Each snippet keeps a scope of its own (a
// function around it), so its names cannot meet the glue's. Run by scripts/build.sh after
// wasm-pack; fails, changing nothing, on a glue or a snippet it cannot match.
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const pkg = join(dirname(fileURLToPath(import.meta.url)), "..", "pkg");
const glueFile = join(pkg, "outbox_idb.js");

function fail(why) {
  console.error(`inline-snippets: ${why} (wasm-bindgen changed its output?)`);
  process.exit(1);
}

let glue = readFileSync(glueFile, "utf8");
const imports = [...glue.matchAll(/^import \{ ([\w, ]+) \} from '\.\/(snippets\/[\w./-]+\.js)';$/gm)];
let inlined = 0;
for (const [line, list, path] of imports) {
  const names = list.split(", ");
  const src = readFileSync(join(pkg, path), "utf8");
  const exported = new Set([...src.matchAll(/^export function (\w+)\(/gm)].map((m) => m[1]));
  const body = src.replace(/^export function /gm, "function ");
  if (/^\s*(import|export)\b/m.test(body)) fail(`${path} has an import or an export other than \`export function\``);
  for (const name of names) {
    if (!exported.has(name)) fail(`${path} does not export the function ${name}`);
    if (new RegExp(`^(function|const|let|var|class) ${name}\\b`, "m").test(glue)) fail(`the glue names ${name} already`);
  }
  const scoped = `const { ${list} } = (() => {\n${body.trimEnd()}\nreturn { ${list} };\n})();`;
  glue = glue.replace(line, () => scoped);
  inlined += 1;
}
if (glue.includes("./snippets/")) fail("the glue imports from ./snippets/ in a form not matched");
writeFileSync(glueFile, glue);
if (existsSync(join(pkg, "snippets"))) rmSync(join(pkg, "snippets"), { recursive: true });
console.log(`[build] ${inlined} JS snippet${inlined === 1 ? "" : "s"} put into the glue`);
