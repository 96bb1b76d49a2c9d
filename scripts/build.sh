#!/usr/bin/env bash
# Builds the npm package (pkg/) from the binding crate with wasm-pack (--target web), and
# the gate binary. Installs what is missing first.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
scripts/setup.sh all
echo "[build] npm package → pkg/ (wasm-pack --release --target web)"
wasm-pack build crates/outbox-idb --release --target web --mode no-install --out-dir ../../pkg --out-name outbox_idb
# The root package.json describes the package; wasm-pack's own copy would shadow it.
rm -f pkg/package.json pkg/.gitignore pkg/README.md
echo "[build] gate → target/release/outbox-gate"
cargo build --release -p outbox-gate
ls -l pkg/*.wasm | awk '{print "[build] wasm size: " $5 " bytes"}'
