#!/usr/bin/env bash
# The whole test suite: installs what is missing (idempotently), then runs every layer in
# order, failing at the first layer that fails. No input needed; CI runs this (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
started=$(date +%s)

step "1/11 setup: wasm target, chromium + chromedriver, wasm-pack, wasm-bindgen-cli, npm deps"
scripts/setup.sh all

step "2/11 lint: cargo fmt --check, cargo clippy -D warnings (host and wasm32)"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
cargo clippy -p outbox-idb --target wasm32-unknown-unknown --all-targets -- -D warnings

step "3/11 planner: unit, SPEC §13 acceptance and property tests (PROPTEST_CASES=${PROPTEST_CASES:-3000})"
cargo test --release -p outbox-core

step "4/11 planner builds for wasm32-unknown-unknown"
cargo build -p outbox-core --target wasm32-unknown-unknown

step "5/11 gate: ledger and HTTP tests (SQLite)"
cargo test -p outbox-gate

step "6/11 binding: wasm-bindgen tests in headless Chromium on a real IndexedDB"
wasm-pack test --headless --chrome --chromedriver /usr/bin/chromedriver --mode no-install crates/outbox-idb

step "7/11 build: npm package (pkg/) and gate binary"
scripts/build.sh

step "8/11 package types: an app written against pkg/outbox_idb.d.ts type-checks (tsc --strict)"
npx tsc -p tests/types/tsconfig.json

step "9/11 end to end: Playwright, two or more pages sharing one IndexedDB, the gate as server"
npx playwright test

step "10/11 soak: SOAK_OPS=${SOAK_OPS:-1000} operations across 4 tabs, faults, tabs closed mid-send, browser SIGKILLs (scripts/soak.sh)"
scripts/soak.sh --no-build

step "11/11 mutation testing of the planner lines the last commit changed (scripts/mutants.sh --changed)"
scripts/mutants.sh --changed HEAD~1

step "all tests passed in $(( $(date +%s) - started )) s"
