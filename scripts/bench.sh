#!/usr/bin/env bash
# Issue 12's benchmark: every figure side by side in one Chromium run on a persistent
# (on-disk) profile — the two floors, flush at 1k/10k, 1/2/4 pages, flush with a real fetch
# beside workbox-background-sync's replay at 1k/5k, enqueue vs a raw strict tx, owner reads
# beside 100k other-owner rows, the package size and its breakdown by crate and function. Prints one table (figure, ratio, target)
# and writes test-results/bench.json. Asserts nothing about time.
#
#   scripts/bench.sh           the full run (issue 12's sizes, median of 5 at the small sizes)
#   scripts/bench.sh --quick   small sizes, one run each (for CI; about 2 minutes)
#
# GATE_PORT (default 8788) is the gate's port; PEER_PORT (default: a free one) the origin the
# pages live on. Builds what is missing first.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  --quick) export BENCH_QUICK=1 ;;
  "") export BENCH_QUICK=0 ;;
  *) echo "usage: scripts/bench.sh [--quick]" >&2; exit 2 ;;
esac
[ -f pkg/outbox_idb_bg.wasm ] && [ -x target/release/outbox-gate ] || scripts/build.sh --gate
scripts/setup.sh bench
npx playwright test -c playwright.bench.config.ts
# Beside the table's gzip figure: where the module's bytes are, by crate and function.
node scripts/wasm-breakdown.mjs
