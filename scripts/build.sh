#!/usr/bin/env bash
# Builds the npm package (pkg/, the package root: `npm pack ./pkg`) from the binding crate
# with wasm-pack (--target web). Installs what is missing first.
#   scripts/build.sh          # the package alone
#   scripts/build.sh --gate   # and the reference gate (target/release/outbox-gate): the demo,
#                             # the tests, the soak and the benchmark serve the app with it
set -euo pipefail
cd "$(dirname "$0")/.."
gate=0
case "${1:-}" in
  --gate) gate=1 ;;
  "") ;;
  *) echo "usage: scripts/build.sh [--gate]" >&2; exit 2 ;;
esac
export PATH="$HOME/.cargo/bin:$PATH"
scripts/setup.sh all
echo "[build] npm package → pkg/ (wasm-pack --release --target web)"
# The standard library is built with the package, for size (issue 35: −1.3 KB gzip on top of
# the planner's and binding's own cuts, −4.4 KB before them): std's
# `optimize_for_size` (smaller sorts, formatting and string code) and the release profile's
# opt-level ("s") instead of the prebuilt std's speed-tuned code (an A/B of 2026-12-06 found
# no flush or enqueue slower for it). `-Z build-std` is unstable:
# RUSTC_BOOTSTRAP=1 allows it on this stable toolchain, for this one command (the tests'
# and the gate's builds use the prebuilt std).
# RUSTC_BOOTSTRAP also makes rustc mangle symbols as nightly does (v0), which names the
# closure shims wasm-bindgen exports after their whole types (+0.1 KB gzip of export
# names): the stable toolchain's legacy mangling is asked for instead.
# OUTBOX_PREBUILT_STD=1 builds with the prebuilt std instead (a toolchain where build-std
# fails); the module is then about 5 KB larger and over the size budget.
# Two more unstable flags, for the package only (issue 35: −7.2 KB gzip together; the
# tests' builds keep both): `-Z location-detail=none` leaves out the file, line and column
# of every panic (−2.7 KB: the paths of the sources and their tables; a panic's report,
# src/panic.rs, then names its message alone), and `-Z fmt-debug=none` makes every `{:?}`
# write nothing (−4.5 KB: the `Debug` code of every type and std's unicode tables). No
# message the library gives is written with `Debug`: serde's "string \"…\"" wording is
# quoted by hand (outbox_core::json::quoted); only a panic of an `unwrap` or `expect` on
# an error loses the error's `Debug` text, its message stays.
# And panics as traps, `-C panic=immediate-abort` (issue 35: −3.9 KB gzip with the hook
# left out: std's panic machinery and every panic site's arguments and messages): a panic
# executes `unreachable`. No panic hook runs; the glue's guard around every call into the
# module (scripts/guard-traps.mjs) reports the trap to the module, which cleans up as the
# hook did (crates/outbox-idb/src/panic.rs). The message then names the trap and, where the
# engine's stack gives them, the module's function index and offset, not the panic's text.
# It needs std built with it: the prebuilt std's build keeps the hook.
size_flags="-Zlocation-detail=none -Zfmt-debug=none -Cpanic=immediate-abort"
std_args=(-- -Z build-std=std,panic_abort -Z build-std-features=optimize_for_size)
if [ "${OUTBOX_PREBUILT_STD:-0}" = 1 ]; then
  std_args=()
  size_flags="-Zlocation-detail=none -Zfmt-debug=none"
fi
RUSTC_BOOTSTRAP=1 RUSTFLAGS="${RUSTFLAGS:-} $size_flags -Zunstable-options -Csymbol-mangling-version=legacy" wasm-pack build crates/outbox-idb --release --target web --mode no-install --out-dir ../../pkg \
  --out-name outbox_idb "${std_args[@]}"
# The crate's own JS (the value walk, crates/outbox-idb/src/convert/walk.js) goes into the
# glue: no pkg/snippets/<hash>/ directory to ship.
node scripts/inline-snippets.mjs
# Every call into the module guarded: a trap (a panic) is reported to the module, which
# cleans up after it (crates/outbox-idb/src/panic.rs).
node scripts/guard-traps.mjs
# pkg/ is the package root: its manifest, README (written for people who installed the
# package), entry point and license texts come from npm/ and the repository root, not from
# wasm-pack, whose generated copies are replaced.
rm -f pkg/package.json pkg/.gitignore pkg/README.md
# The entry point and its modules (index.js imports the others), the React hook, the
# inspector, their types.
cp npm/package.json npm/README.md npm/index.js npm/index.d.ts npm/errors.js npm/configure.js npm/transport.js \
  npm/schedule.js npm/live.js npm/react.js npm/react.d.ts npm/inspector.js npm/inspector.d.ts LICENSE-MIT LICENSE-APACHE pkg/
# wasm-bindgen declares `[Symbol.dispose]()` on every class; without this reference an app
# compiling with `lib` older than esnext and `skipLibCheck: false` fails on the .d.ts.
sed -i '1i /// <reference lib="esnext.disposable" />' pkg/outbox_idb.d.ts
# wasm-pack's own wasm-opt is off (Cargo.toml): Debian's binaryen 108 emits modules that fail
# at run time. The npm binaryen (v132) is used instead; features come from the module's
# target_features section. `--converge` repeats the passes while they still shrink the
# module (−0.8 KB gzip, about 20 s).
# `--low-memory-unused` lets it fold a constant added to an address into the load's or
# store's offset (−0.8 KB gzip): the two differ only when the addition wraps past 2^32 onto
# the first 1 KB, which no Rust pointer does (rustc links the stack first: the data starts
# at 1 MiB, the stack grows down from there and reaches the first 1 KB only when it is
# about to overflow — and even there no address computation wraps).
# `--strip-target-features` drops the features section (−0.1 KB gzip) once it has been read:
# browsers ignore it; only a tool that reads the module again (another wasm-opt) would want
# `--enable-bulk-memory` etc. from its command line instead.
# The passes: -Os, then the control flow flattened and rebuilt by binaryen's relooper
# (`--flatten --rereloop`), then -Os twice, repeated while the module shrinks: −1.3 KB gzip
# against `-Oz --converge` (2026-12-06; -Os alone −0.4 KB: gzip takes -Os's code better than
# -Oz's smaller one). The flattening and relooping done twice in each round, with -Os
# between: −143 B gzip more (2026-12-07; three times, or a second round after the two -Os:
# less; `--merge-similar-functions` +106 B, `-iit` −112 B not taken, see BENCHMARKS.md).
echo "[build] wasm-opt -Os --flatten --rereloop -Os --flatten --rereloop -Os -Os --converge (npm binaryen)"
# OUTBOX_KEEP_NAMES=1 keeps the functions' names in the module (`-g` instead of
# `--strip-debug`), so that a CPU profile names them (bench/timeline.trace.ts with
# TIMELINE_CPU=1); the module is then about 35 KB gzip larger and its budget not checked.
names=--strip-debug
if [ "${OUTBOX_KEEP_NAMES:-0}" = 1 ]; then names=-g; export SKIP_SIZE_BUDGET=1; fi
npx wasm-opt --low-memory-unused -Os --flatten --rereloop -Os --flatten --rereloop -Os -Os --converge "$names" --strip-producers --strip-target-features \
  pkg/outbox_idb_bg.wasm -o pkg/outbox_idb_bg.opt.wasm
mv pkg/outbox_idb_bg.opt.wasm pkg/outbox_idb_bg.wasm
# The gate only when asked: a newcomer building the package waits for the package alone
# (the gate's release build was 254 of the 336 s of a first build).
if [ "$gate" = 1 ]; then
  echo "[build] gate → target/release/outbox-gate"
  cargo build --release -p outbox-gate
fi
# Fails on a JS import without `catch` that nobody reviewed (a throw in it would cross the
# wasm frames: crates/outbox-idb/src/js.rs).
node scripts/glue-imports.mjs
# Then the imports' names shortened in the module and the glue together (it reads them).
node scripts/minify-imports.mjs
# Prints the size and fails above its budget (issue 12); SKIP_SIZE_BUDGET=1 (scripts/planted.sh:
# a planted bug may add a few bytes) only prints it.
if [ "${SKIP_SIZE_BUDGET:-0}" != 1 ]; then node scripts/wasm-size.mjs; fi
