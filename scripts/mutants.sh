#!/usr/bin/env bash
# Mutation testing of the planner (crates/outbox-core): cargo-mutants breaks one rule at a
# time (a `>` becomes `>=`, a check returns early, a value is replaced) and runs the tests;
# a mutant the tests do not notice ("missed") is a rule nobody proves. Equivalent mutants
# (changes that cannot alter behaviour) are listed, each with its reason, in
# .cargo/mutants.toml and are not generated.
#
#   scripts/mutants.sh                 every mutant of outbox-core (about 700; an hour or more
#                                      on 2 cores)
#   scripts/mutants.sh --changed [REV] only mutants in lines changed since REV (default
#                                      HEAD~1): the short form CI runs
#   scripts/mutants.sh -- ARGS         extra cargo-mutants arguments (e.g. -f src/ack.rs)
#
# Prints: mutants tested, caught, missed, timeouts, unviable, and the equivalents listed.
# Exits non-zero when a mutant is missed. PROPTEST_CASES defaults to 64 here.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
export PROPTEST_CASES="${PROPTEST_CASES:-64}"
VERSION=27.1.0

out=target/mutants
mkdir -p "$out"
args=(-p outbox-core --timeout 60 -j 1 -o "$out")
if [ "${1:-}" = "--changed" ]; then
  rev="${2:-HEAD~1}"
  if ! git rev-parse --verify -q "$rev" >/dev/null; then
    echo "[mutants] no revision $rev to compare with (shallow clone?): nothing to test"
    exit 0
  fi
  git diff "$rev" -- crates/outbox-core/src > "$out/changed.diff"
  if [ ! -s "$out/changed.diff" ]; then
    echo "[mutants] no planner source changed since $rev: nothing to test"
    exit 0
  fi
  args+=(--in-diff "$out/changed.diff")
  shift $(( $# >= 2 ? 2 : 1 ))
fi
[ "${1:-}" = "--" ] && shift
if ! cargo mutants --version 2>/dev/null | grep -q "$VERSION"; then
  echo "[mutants] installing cargo-mutants $VERSION (about 3 minutes)"
  cargo install --locked cargo-mutants --version "$VERSION"
fi

status=0
cargo mutants "${args[@]}" "$@" || status=$?
# cargo-mutants exits 2 when mutants were missed, 3 on timeouts, 0 when all were caught. A
# mutant that makes the tests hang (a drain that never ends) was noticed: a timeout counts
# as caught here.
[ "$status" -eq 3 ] && status=0
outcomes="$out/mutants.out/outcomes.json"
if [ -f "$outcomes" ]; then
  node -e '
    const o = require(process.argv[1]);
    const n = (s) => o.outcomes.filter((x) => x.scenario !== "Baseline" && x.summary === s).length;
    const eq = (require("fs").readFileSync(".cargo/mutants.toml", "utf8").match(/^\s*"[^"]+",\s*#/gm) || []).length;
    console.log(`[mutants] tested ${o.total_mutants}: caught ${n("CaughtMutant")}, missed ${n("MissedMutant")}, ` +
      `timeouts ${n("Timeout")}, unviable ${n("Unviable")}; equivalent (listed, not generated) ${eq}`);
  ' "$PWD/$outcomes"
  # cargo-mutants exits 3 when there were timeouts even if some mutants were also missed:
  # a missed mutant fails the run whatever the exit code said.
  [ -s "$out/mutants.out/missed.txt" ] && { echo "[mutants] missed:"; cat "$out/mutants.out/missed.txt"; status=2; }
fi
exit "$status"
