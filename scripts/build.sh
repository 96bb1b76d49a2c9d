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
# wasm-pack's own wasm-opt is off (Cargo.toml): Debian's binaryen 108 emits modules that fail
# at run time. The npm binaryen (v132) is used instead; features come from the module's
# target_features section.
echo "[build] wasm-opt -Oz (npm binaryen)"
npx wasm-opt -Oz --strip-debug --strip-producers pkg/outbox_idb_bg.wasm -o pkg/outbox_idb_bg.opt.wasm
mv pkg/outbox_idb_bg.opt.wasm pkg/outbox_idb_bg.wasm
echo "[build] gate → target/release/outbox-gate"
cargo build --release -p outbox-gate
echo "[build] wasm size: $(wc -c < pkg/outbox_idb_bg.wasm) bytes, $(gzip -9c pkg/outbox_idb_bg.wasm | wc -c) gzipped"
