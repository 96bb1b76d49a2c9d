#!/usr/bin/env bash
# Prints outbox throughput against the raw IndexedDB floor in the same Chromium run.
# BENCH_SIZES=200,1000,3000 by default. Builds what is missing first.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f pkg/outbox_idb_bg.wasm ] && [ -x target/release/outbox-gate ] || scripts/build.sh
npx playwright test -c playwright.bench.config.ts
