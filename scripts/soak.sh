#!/usr/bin/env bash
# The seeded soak (tests/soak): tabs of one origin in a persistent Chromium profile edit
# records of two accounts while faults are injected, tabs are closed mid-send and the
# browser is SIGKILLed mid-flush; then the queues drain and one summary line is printed
# (duplicate effects, lost operations, stale answers that changed a row, records differing
# from the user's last write, attempts of one operation overlapping inside a lease, resends
# after a final answer, edits applied out of the user's order, effects under another
# account: all asserted 0; every fault class and kill kind asserted to have happened).
# scripts/planted.sh checks that these checks can fail. Beside it, a peer under the same faults:
# workbox-background-sync's Queue in a service worker, against the same gate with the same
# Idempotency-Key per operation (tests/soak/workbox.soak.ts); its PEER line reports its lost
# and duplicated operations without asserting them. Both lines are printed again at the end.
#
#   scripts/soak.sh                   # CI size: 1,000 operations, a fresh seed (printed)
#   scripts/soak.sh --ops 10000       # the long run
#   scripts/soak.sh --seed 12345      # replays the schedule of a printed seed
#   scripts/soak.sh --tabs 6          # more tabs (at least 4)
#   scripts/soak.sh --peer-ops 2000   # the peer's size (default: min(ops, 500)); 0 leaves it out
# Builds pkg/ and the gate first unless --no-build. GATE_PORT picks the gate's port (8791).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
build=1
while [ $# -gt 0 ]; do
  case "$1" in
    --ops) export SOAK_OPS="$2"; shift 2 ;;
    --seed) export SOAK_SEED="$2"; shift 2 ;;
    --tabs) export SOAK_PAGES="$2"; shift 2 ;;
    --peer-ops) export SOAK_PEER_OPS="$2"; shift 2 ;;
    --no-build) build=0; shift ;;
    -h|--help) sed -n 2,19p "$0"; exit 0 ;;
    *) echo "soak.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
# One seed for the run, drawn here when not given, so every process of the run uses it.
export SOAK_SEED="${SOAK_SEED:-$(( (RANDOM << 15) | RANDOM ))}"
if [ "$build" = 1 ]; then scripts/build.sh --gate; fi
# The summary: the SOAK and PEER lines together, whatever else the run printed.
mkdir -p test-results
log=test-results/soak.log
set +e
# --peer-ops 0 runs the outbox's soak alone: the peer's file is left out, not skipped.
files=()
if [ "${SOAK_PEER_OPS:-}" = 0 ]; then files=(tests/soak/outbox.soak.ts); fi
npx playwright test -c playwright.soak.config.ts "${files[@]}" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
echo
echo "summary (seed $SOAK_SEED):"
grep -aE '^SOAK ' "$log" || echo "SOAK: no line, the soak did not finish: see the output above"
grep -aE '^PEER ' "$log" || echo "PEER: no line ($([ "${SOAK_PEER_OPS:-}" = 0 ] && echo 'left out with --peer-ops 0' || echo 'the peer did not finish: see the output above'))"
exit "$status"
