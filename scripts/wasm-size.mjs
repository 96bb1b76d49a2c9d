#!/usr/bin/env node
// The size budget of the npm package's wasm (issue 12): prints the size of
// pkg/outbox_idb_bg.wasm, raw and gzip -9 (node's zlib at level 9), and fails above the
// budget. The budget is the size reached, plus a small margin: lower it when the module
// shrinks, never raise it to make a change pass — find what grew instead (`twiggy diff`
// of two builds that keep their name sections). Raised only for growth a named fix buys,
// said in its commit: 186,000 → 186,300 for a panic that aborts its transaction and
// rejects its call (+0.6 KB) and a failed flush that keeps its report (+0.3 KB);
// 186,300 → 187,300 for chains of intents converted in their order (+0.8 KB);
// 187,300 → 189,100 for flushes of one owner taking turns across tabs (src/turn.rs and the
// owner's last change in notify.rs: +1.9 KB, of which the wait inlined into `flush` ~0.6).
// Lowered to 173,400 after ryu-js's `small` tables (−9.9 KB), the flush's tasks in a vector
// instead of a BTreeMap (−4.5 KB) and JSON text by serde_json::to_string, not Display.
// 173,400 → 175,000 for what a review of the turns found (+1.3 KB): a panic releases them,
// a flush inside a send of the same tab shares its turn, a refused lock request, the
// flush's deadline and a clock that never jumps back bound the wait.
// 175,000 → 175,600 for what a second review of the turns found (+0.8 KB, to 175,484): a
// request the wait gives up on is withdrawn (AbortSignal) and a grant after that passes the
// lock on, a panic forgets the turns tabs hold, a flush whose outbox closes stops waiting.
// 175,600 → 176,700 for what a review of 2026-12-02 evening found (+1.1 KB, to 176,671):
// owner-wide commands in one owner-range scope over a hashed view (linear, not quadratic,
// in the owner's rows), bounds on leaseMs and backoff, a clock reading that is no instant
// replaced, an unsubscribe callable twice.
// 176,700 → 177,400 for the night of 2026-12-02 (+0.7 KB, to 177,310): a unique index an
// answer's reconcile breaks leaves only that answer unapplied (the others of its shared
// transaction are written again one by one), and a record write refused because its
// transaction already failed names the transaction's error (QUOTA, a unique index).
// 177,400 → 177,600 (+0.3 KB, to 177,565): two planner fixes a read-only attack found — a
// new edit waits for a kept successor in chain order (tab clocks differ), and an orphan
// intent refused while the one it waits for converts is tried again in the same flush.
// 177,600 → 178,800 (+1.2 KB, to 178,735): two fixes of 2026-12-03 reviews found — after
// an auth answer a claimed row whose send was not yet taken is released, not sent on the
// expired session (§6); an owner or row id with a lone surrogate is refused instead of
// converted to another owner's name (§11).
// 178,800 → 178,900 (+0.1 KB, to 178,836): `flush` options checked (a string or a `Date`
// for `maxRows`/`deadline`/`concurrency` refused; a `maxRows` ≥ 2^32 kept whole on wasm32).
// 178,900 → 179,500 (+0.6 KB, to 179,468): hostile values of 2026-12-03 — built-ins that
// can run app code bound with `catch` (src/js.rs: a detached ArrayBuffer, a throwing getter
// or `constructor`, a revoked Proxy no longer throw through the wasm frames), an array
// whose length cannot be read refused, `Retry-After` clamped to 2^53 − 1 ms, `tabId` and
// `dbName` taken exactly.
// 179,500 → 180,300 (+0.7 KB, to 180,210): the second pass of that audit — the library
// awaits a promise of its own (an app promise's own `then` threw through), a Date read by
// the intrinsic `getTime`, no Debug formatting of JS values, catch-bound console calls,
// containers judged by their length before their items are walked, byte digests in 64 KB
// chunks, last-change notes capped, `patch` keeping a field named `__proto__`.
// 180,300 → 180,800 (+0.5 KB, to 180,695): what a review of those found — a native promise
// followed by the intrinsic `then` (WebKit left the promise pending when a `constructor`
// getter threw in its resolve job), only brand-checked ArrayBuffers digested, a panic
// inside a flush no longer leaving the tab's record of its flushes borrowed for good
// (SharedOutstanding), clearer messages for ill-formed ids.
// 180,800 → 181,300 (+0.5 KB, to 181,172): rows the library wrote but could never send — a
// body at the size limit read back with its own budget (MAX_STORED_NODES), merges kept
// within the bound a body may have (outbox_core::body_size), a server body JSON cannot
// hold read as no body by classifyHttp.
// 181,300 → 181,400 (+0.15 KB, to 181,322): a record write follows every forwarding stub a
// record's rekeys left (after 8 a patch was skipped silently), refusing stubs in a cycle.
// 181,400 → 181,600 (+0.3 KB, to 181,575): what a review of that found — a cycle of stubs
// is no record instead of an error (an answer's reconcile meeting one left its row sent
// again for ever), a put keyed only in its value at a compound key path follows stubs, a
// store keyPath through `$outboxMovedTo` refused, a flush's `concurrency` checked as at
// `open`; an answer's `retryAfterMs` read from any finite number.
// Lowered to 181,400 (to 181,378): the key at a key path read by one function where
// `check` and `apply` each had their own.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

// 181,400 → 182,700 (+1.2 KB, to 182,583): issue 32's planner fixes and what an attack
// on them found — a blocked row its successor overtook is marked and never absorbed by a
// later update (a field never comes back older), selection and claim share one
// predecessor rule, the app's own claim holds its record in the tab until its ack, a round
// that sent or asked a port reads the queue again, an ACK refuses another owner's row, an
// auth answer stops every flush of its owner in the tab, a lease end past the longest lease
// is not honoured for claiming yet waited for by an edit — and issue 33's layers (+53 B).
// 182,700 → 183,700 (+1.1 KB, to 183,629 measured from cargo + wasm-bindgen + wasm-opt):
// issue 34's SCHEMA_MISMATCH — a records declaration the database does not match (a store's
// key changed, stores or indexes changed without raising records.version) refused at open,
// before an upgrade changes anything, and an upgrade's error returned as the open's.
// 183,700 → 184,800 (+0.8 KB, to 184,706 with both): issue 34's network rules — a flush
// told the browser is offline claims nothing, a row deferred by the network is due once the
// network returns, and the report's nextDueAt for the scheduler.
// Issue 35 is where the module shrinks.
// Lowered to 178,300 (to 178,171): talc instead of dlmalloc (−2.8 KB), wasm-opt
// --low-memory-unused and --strip-target-features (−0.9 KB), the imports named a, b, … in
// the module and its glue by scripts/minify-imports.mjs (−2.9 KB).
// Lowered to 167,600 (to 167,465) with the binding's own code cut (−9.8 KB: one boxed future
// type per call, no hash tables of its own, no substring searcher, loops instead of
// collect chains), the planner's one non-generic JSON field walk and table-driven codec
// (−1.4 KB), and the flush's claims ahead of sends (+0.4 KB).
// Lowered to 165,250 (to 165,168): the flush driver's jobs owned by its own small set
// instead of futures_util (−1.4 KB), fewer await states in it, one future under
// Store::transact, reconcile's answer set key by key, one reconcile warning (−1.0 KB).
// Then the walk over JS values in JavaScript, put into the glue
// (crates/outbox-idb/src/convert/walk.js, −3.8 KB of wasm for +2.2 KB of minified glue):
// lowered to 161,450 (to 161,368).
// Lowered to 156,400 (to 156,317, 2026-12-06): the conflict note built as a Map, not with
// json! (−0.6 KB), and std built for size with the package (scripts/build.sh, −4.4 KB).
// Lowered to 143,700 (to 143,643): the planner without std's hash tables, sort and
// VecDeque::drain, and about 25 collecting chains as loops (−13.3 KB measured alone); the
// binding's undecodable entry without json!, ids and random bytes by hand, one with_records
// future (−2.6 KB).
// Lowered to 136,400 (to 136,367, 2026-12-06): classify's date parser as a byte scanner
// (−0.4 KB), the package built without panic locations and `Debug` formatting
// (`-Z location-detail=none -Z fmt-debug=none` in scripts/build.sh, −6.9 KB).
// Lowered to 131,600 (to 131,567, 2026-12-06): wasm-opt's -Os with --flatten --rereloop
// to convergence instead of -Oz (−1.4 KB), JS property reads and writes through one
// out-of-line js::get / js::set, the queue's reads as plain functions awaited by one
// Store::read_one, the claim's and owner-wide commands' one transaction future (−1.4 KB),
// the fingerprint's numbers from serde_json's digits instead of ryu-js (−1.9 KB), the
// records' messages by one builder, classifyHttp's outcome set key by key (−0.4 KB).
// 131,600 → 131,900 (+0.3 KB, to 131,865): contract §15's hostile options — the app's
// options of `open` (`backoff` included) and the `records` query read through a checked
// args::field, a read that throws refused with INVALID_ARGUMENT naming the option and what
// was thrown, instead of read as `undefined` (a default backoff, every record of a store).
// Lowered to 128,800 (to 128,728, 2026-12-06): the binding's one-caller futures folded into
// their callers (−2.2 KB: the flush's reads, the transaction's connection, the open, the
// records' reads, the owner-wide commands, the lock race, the panic guard), the planner's
// copies and option chains as loops, `decode` where only the row is used, the JCS key
// order compared char by char (−1.4 KB); a transaction's reads awaited through their last
// request (+0.05 KB, for speed).
// Raised to 129,550 (+0.8 KB, to 129,528, 2026-12-06): a claim batch re-reads its rows as
// stretches of the `[owner, savedAt]` index, one request per stretch instead of one per row
// (core flush/stretch.rs): about 6 % on the instant flush, measured both ways (BENCHMARKS.md);
// then a review's fixes (+165 B): a row a stretch missed has the queue read again, the
// round's places counted in the driver's whole read, non-string keys kept apart in the view.
// Raised to 130,080 (+0.5 KB, to 130,072, 2026-12-07): §8 answers written together (an
// answer waits for the next claim batch, for no send to be out, or ACK_WAIT_MS: a timer's
// Request::Wait): a third less browser CPU per row for answers that trickle in.
// Lowered (2026-12-07, size cuts measured on their own base, 129,528 → 127,807): the flush
// driver's jobs borrowing what drive holds (−0.4 KB), the flush report, metrics, send op
// and ticket set key by key and a patch's fields and a path's key through the one
// serializer of a Value (−0.7 KB: no serde serializer of their own), Map look-ups by &str
// only (−0.3 KB), wasm-opt's flattening and relooping twice per round (−0.1 KB), fewer
// await states and futures in the record writes, the one-row reads, the open and the
// replace's puts (−0.2 KB). With the answers written together: 128,240.
// Lowered to 127,940 (to 127,925, 2026-12-07): every export renamed `a`, `b`, … with the
// glue's uses of it (scripts/minify-imports.mjs, −323 B).
// Lowered to 125,030 (to 125,014, 2026-12-07, cuts measured each on its own base): the
// binding's closures of one type per shape (the open's events and timeout, the request's
// and the transaction's settling, one Promise executor: −0.6 KB), its reads as data rather
// than closures (−0.3 KB), classifyHttp's headers through a stack closure (−0.2 KB); the
// planner's generic copies folded — the sort's two closures into one, one chain order for
// enqueue, conversion and an ACK's intents, one replace of a row alone, one reissue for a
// conflict and retryBlocked (−1.2 KB) — and one ordered removal through the map's retain
// instead of IndexMap's shift_remove (−0.3 KB).
// Lowered to 119,800 (to 119,779, 2026-12-07 midday; issue 35's ≤ 120 KB): panics as traps
// (-C panic=immediate-abort, the glue's guard reporting a trap to the module: −3.9 KB), then
// no core::fmt left (every message pieced from its texts and numbers: −0.7 KB) and messages
// that name a key first built by one function (−0.6 KB with the smaller pieces).
// Raised to 119,900 (to 119,894, 2026-12-07 evening; still ≤ 120 KB): a flush stopped by
// its deadline with rows left reports them due at once (contract §8, +105 B), so that a
// service worker's `sync` is fired again rather than ending with them queued.
// Raised to 119,990 (to 119,988, 2026-12-07 night; still ≤ 120 KB): a trap no call's poll
// made (a trapped call's task woken again) aborts no other call's transaction, and the
// calls a trap leaves unpolled in its tick are scheduled again (+94 B).
// Lowered to 119,960 (to 119,960, the same night): the rows claimed ahead released at
// once at the deadline (−34 B), and as many rows claimed ahead as `concurrency` (+6 B).
// Raised to 119,972 (to 119,972): a flush stopped by its deadline or an auth answer sends no
// row claimed ahead, wherever the stop was seen (+14 B; still ≤ 120 KB).
// Lowered to 119,969: an answer past the deadline leaves the release of the rows claimed
// ahead to `send_ready`, which makes it wherever the deadline was seen (−3 B).
// Raised to 119,988 (2026-12-07, the session after): a claim committed after the deadline
// sends nothing (the flush's clock read at the commit, §8; +19 B, still ≤ 120 KB).
// Lowered to 119,857: a send asked for and not taken yet when the flush ends (deadline,
// auth answer) goes back among the rows claimed ahead, in `end`, instead of a release loop
// of its own for the auth ending (−131 B).
// Raised to 119,877: a flush stopped by `maxRows` in the step that asked for its last send
// ends on a deadline or an auth answer too, so that send does not go out; a read past the
// deadline releases what the end took back (+20 B).
// Lowered to 119,874: a claim committed after the deadline or an auth answer leaves the rows
// claimed ahead to `send_ready`'s release at the pump that follows (−3 B).
// Lowered to 119,829 (2026-12-07 night): a claim batch decodes each row once (no second decode for
// its evidence, no copy of the expected rows it throws away), a round builds its candidates
// from the rows it decoded, an ACK under a target that is not `pending:` decodes no row of it
// for intents (−45 B).
const BUDGET_GZIP_BYTES = 119_829;

const file = join(dirname(fileURLToPath(import.meta.url)), "..", "pkg", "outbox_idb_bg.wasm");
const wasm = readFileSync(file);
const gzip = gzipSync(wasm, { level: 9 }).length;
console.log(`[build] wasm size: ${wasm.length} bytes, ${gzip} gzipped (budget ${BUDGET_GZIP_BYTES} gzipped)`);
if (gzip > BUDGET_GZIP_BYTES) {
  console.error(
    `[build] pkg/outbox_idb_bg.wasm is ${gzip} bytes gzipped, over its budget of ${BUDGET_GZIP_BYTES} ` +
      `by ${gzip - BUDGET_GZIP_BYTES}: something made the module bigger (see scripts/wasm-size.mjs)`,
  );
  process.exit(1);
}
