#!/usr/bin/env node
// Type-checks every TypeScript block (```ts / ```typescript) of README.md, docs/*.md and the
// package's own README (npm/README.md) against the built package (pkg/), as an app would
// compile them: `--strict`, `lib` without esnext, once with `skipLibCheck: false` and once
// with `skipLibCheck: true`. Each block is its own module; `import … from "tab-outbox"`
// resolves to pkg/ through pkg/package.json. A block uses `declare` for what the app
// supplies (a user id, a URL helper), so it compiles as written.
//
// First, every link of README.md and docs/*.md must lead to a file of the repository.
//
// The generated files keep the markdown's line numbers: tsc's "README_md.L42.ts(45,7)" is
// line 45 of README.md.
import { createHash } from "node:crypto";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const out = join(root, "tests", "types", "snippets");

// Blocks that are an outline of the API rather than a program, excluded by their exact
// text: if the block changes, it is checked again and someone decides anew.
// (None today: docs/contract.md §15 marks its outline as `text`.)
const OUTLINES = new Map();

const sources = ["README.md", "npm/README.md", ...readdirSync(join(root, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)];

/** The ```ts blocks of one markdown file: `{ line, code }`, `line` = first code line (1-based). */
function blocks(text) {
  const found = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(```+)\s*(ts|typescript)\s*$/.exec(lines[i]);
    if (!open) continue;
    const body = [];
    let j = i + 1;
    while (j < lines.length && !lines[j].trimStart().startsWith(open[2])) body.push(lines[j++]);
    found.push({ line: i + 2, code: body.join("\n") });
    i = j;
  }
  return found;
}

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const files = [];
const nodeFiles = [];
const skipped = [];
for (const source of sources) {
  const text = readFileSync(join(root, source), "utf8");
  for (const { line, code } of blocks(text)) {
    const hash = createHash("sha256").update(code).digest("hex").slice(0, 8);
    const key = `${source}#${hash}`;
    if (OUTLINES.has(key)) {
      skipped.push(`${source}:${line} (${OUTLINES.get(key)})`);
      continue;
    }
    const name = `${source.replace(/[/.]/g, "_")}.L${line}.ts`;
    // Blank lines up to the block's first line keep tsc's line numbers those of the markdown;
    // `export {}` makes a block without imports a module of its own.
    writeFileSync(join(out, name), "\n".repeat(line - 1) + code + "\nexport {};\n");
    // A block written for Node (a test over fake-indexeddb) compiles with Node's types;
    // the others without, as a browser app does.
    (/from "node:/.test(code) ? nodeFiles : files).push(name);
  }
}

// The repository's README and docs link only to files of the repository (the package's
// README is checked against the package's contents by tests/pack).
const badLinks = [];
for (const source of sources.filter((f) => f !== "npm/README.md")) {
  const text = readFileSync(join(root, source), "utf8");
  for (const m of text.matchAll(/!?\[[^\]]*\]\(([^)\s]+)[^)]*\)/g)) {
    const target = m[1].split("#")[0];
    if (target === "") continue;
    const path = join(root, dirname(source), target);
    const inside = !/^[a-z]+:/i.test(target) && !target.startsWith("/") && !relative(root, path).startsWith("..");
    if (!inside || !existsSync(path)) badLinks.push(`${source}: ${m[1]}`);
  }
}
if (badLinks.length > 0) {
  console.error(`links that lead outside the repository or to no file:\n  ${badLinks.join("\n  ")}`);
  process.exit(1);
}

if (files.length + nodeFiles.length === 0) {
  console.error("no TypeScript block found: nothing was checked");
  process.exit(1);
}

const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
let failed = false;
for (const [group, types, list] of [["browser", [], files], ["node", ["node"], nodeFiles]]) {
  if (list.length === 0) continue;
  for (const skipLibCheck of [false, true]) {
    const config = {
      compilerOptions: {
        target: "es2022",
        module: "es2022",
        moduleResolution: "bundler",
        // What Vite's templates use: no esnext, so the package must bring what it needs.
        lib: ["es2022", "dom", "dom.iterable"],
        strict: true,
        noEmit: true,
        skipLibCheck,
        types,
        typeRoots: [join(root, "node_modules", "@types")],
        paths: { "tab-outbox": [relative(out, join(root, "pkg"))], "tab-outbox/*": [`${relative(out, join(root, "pkg"))}/*`] },
      },
      files: list,
    };
    const configPath = join(out, `tsconfig.${group}.skipLibCheck-${skipLibCheck}.json`);
    writeFileSync(configPath, JSON.stringify(config, null, 2));
    const what = `${list.length} ${group} blocks (strict, skipLibCheck: ${skipLibCheck})`;
    try {
      execFileSync(process.execPath, [tsc, "-p", configPath], { cwd: out, stdio: "inherit" });
      console.log(`ok: ${what} type-check`);
    } catch {
      console.error(`FAILED: ${what}: the errors above (file names carry the markdown's line numbers)`);
      failed = true;
    }
  }
}
for (const s of skipped) console.log(`not checked: ${s}`);
process.exit(failed ? 1 : 0);
