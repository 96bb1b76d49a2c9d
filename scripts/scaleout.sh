#!/usr/bin/env bash
# Scale-out proof: three gate processes (127.0.0.1:8811-8813) on one throwaway PostgreSQL,
# a bounded load from one client on loopback (5 000 operations, concurrency 64, ~10 % sent
# twice to another process, ~3 % abandoned mid-request and resent), then the invariants
# checked in the database; prints the figures. Exits 1 if an invariant fails. Options are
# passed on (--ops N, --concurrency N, --duplicates-percent N, --aborts-percent N).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
cargo build --release -p outbox-gate --bin outbox-gate --example scaleout
exec scripts/pg.sh target/release/examples/scaleout --gate target/release/outbox-gate "$@"
