#!/usr/bin/env node
// The typed API as a strict TypeScript app compiles it against the built package (pkg/):
// typed.ts must compile; wrong-store.ts must fail, with an error on every line marked
// `// MISTAKE` and on no other line (a wrong store name, wrong fields read, written, typed).
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..");
const out = join(here, "typed-out");
const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

function compile(file) {
  const config = {
    compilerOptions: {
      target: "es2022", module: "es2022", moduleResolution: "bundler", lib: ["es2022", "dom", "dom.iterable"],
      strict: true, noEmit: true, skipLibCheck: false, types: [],
      paths: { "tab-outbox": [relative(out, join(root, "pkg"))], "tab-outbox/*": [`${relative(out, join(root, "pkg"))}/*`] },
    },
    files: [relative(out, join(here, file))],
  };
  const path = join(out, `tsconfig.${file}.json`);
  writeFileSync(path, JSON.stringify(config, null, 2));
  try {
    execFileSync(process.execPath, [tsc, "-p", path], { cwd: out, encoding: "utf8" });
    return "";
  } catch (e) {
    return `${e.stdout}${e.stderr}`;
  }
}

let failed = false;
const good = compile("typed.ts");
if (good !== "") {
  console.error(`FAILED: typed.ts does not compile:\n${good}`);
  failed = true;
} else console.log("ok: typed.ts compiles (strict)");

const errors = compile("wrong-store.ts");
const errorLines = new Set([...errors.matchAll(/wrong-store\.ts\((\d+),\d+\): error/g)].map((m) => Number(m[1])));
const source = readFileSync(join(here, "wrong-store.ts"), "utf8").split("\n");
const marked = source.flatMap((line, i) => (/\/\/ MISTAKE/.test(line) ? [i + 1] : []));
for (const line of marked) {
  if (!errorLines.has(line)) {
    console.error(`FAILED: wrong-store.ts:${line} compiled, but the mistake there must be an error: ${source[line - 1].trim()}`);
    failed = true;
  }
}
for (const line of errorLines) {
  if (!marked.includes(line)) {
    console.error(`FAILED: wrong-store.ts:${line} has an error that is not a planted mistake:\n${errors}`);
    failed = true;
  }
}
if (!failed) console.log(`ok: wrong-store.ts fails to compile on each of its ${marked.length} mistakes, and only there`);
rmSync(out, { recursive: true, force: true });
process.exit(failed ? 1 : 0);
