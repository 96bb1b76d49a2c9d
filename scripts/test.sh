#!/usr/bin/env bash
# The whole test suite: installs what is missing, then runs every test layer in order.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }

step "setup (idempotent)"
scripts/setup.sh rust

step "lint: cargo fmt --check, cargo clippy -D warnings"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings

step "planner: unit, SPEC §13 acceptance and property tests (PROPTEST_CASES=${PROPTEST_CASES:-3000})"
cargo test --release -p outbox-core

step "planner builds for wasm32-unknown-unknown"
cargo build -p outbox-core --target wasm32-unknown-unknown

step "all tests passed"
