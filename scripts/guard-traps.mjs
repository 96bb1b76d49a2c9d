#!/usr/bin/env node
// The package's module is built with panics as traps (`-Cpanic=immediate-abort`,
// scripts/build.sh; issue 35: −3.9 KB gzip with the hook left out): a panic executes
// `unreachable`, with no hook to clean up after it. The trap reaches JavaScript as a
// `WebAssembly.RuntimeError` thrown out of the call into the module that met it. This puts
// a guard around every call into the module (the glue reaches the module only through
// `wasm.<export>`): on a trap it reports it to the module (`__outboxTrapped`, then
// `__outboxTrapReport`, crates/outbox-idb/src/panic.rs), which aborts the transactions
// whose writes are not all issued and releases the flushes' turns, then rejects the API
// call being polled with `INTERNAL` and writes the message to the console; and then
// rethrows. Run by scripts/build.sh after inline-snippets.mjs; fails, changing nothing, on
// a glue it cannot match.
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const glueFile = join(dirname(fileURLToPath(import.meta.url)), "..", "pkg", "outbox_idb.js");

function fail(why) {
  console.error(`guard-traps: ${why} (wasm-bindgen changed its output?)`);
  process.exit(1);
}

const glue = readFileSync(glueFile, "utf8");
const init = "\n    wasm = instance.exports;\n";
if (glue.split(init).length !== 2) fail("no single `wasm = instance.exports;` in __wbg_finalize_init");
if (!/^export function __outboxTrapped\(\) \{$/m.test(glue)) fail("no `export function __outboxTrapped()`");
if (!/^export function __outboxTrapReport\(message\) \{$/m.test(glue)) fail("no `export function __outboxTrapReport(message)`");
if (glue.includes("function guardTraps(")) fail("the glue is guarded already");

// The guard as it goes into the glue, with one line of comment: the glue ships unminified
// (a trap seen by several nested calls is reported once; one met while reporting, not at
// all; the clean-up allocates nothing in the module, which the trap may have left with a
// broken allocator, so it goes before the message).
const guard = `
// Traps (panics) reported to the module before rethrowing: scripts/guard-traps.mjs.
let trapSeen = null;
let trapReporting = false;
function guardTraps(exports) {
    const guarded = {};
    for (const name of Object.keys(exports)) {
        const f = exports[name];
        guarded[name] = typeof f !== 'function' ? f : (...args) => {
            try {
                return f(...args);
            } catch (e) {
                if (e instanceof WebAssembly.RuntimeError && e !== trapSeen && !trapReporting) {
                    trapSeen = e;
                    trapReporting = true;
                    for (const step of [__outboxTrapped, () => __outboxTrapReport(trapMessage(e))]) {
                        try {
                            step();
                        } catch (_) {}
                    }
                    trapReporting = false;
                }
                throw e;
            }
        };
    }
    return guarded;
}
function trapMessage(e) {
    const at = /wasm-function\\[\\d+\\]:0x[0-9a-f]+/.exec(String(e.stack));
    return 'outbox-idb: internal error, please report it: ' + e.message + (at ? ' (at ' + at[0] + ')' : '');
}
`;

writeFileSync(glueFile, glue.replace(init, "\n    wasm = guardTraps(instance.exports);\n") + guard);
console.log("[build] every call into the module guarded against traps");
