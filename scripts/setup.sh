#!/usr/bin/env bash
# Installs what the project needs, skipping whatever is already present at the right
# version. Safe to run again and again; needs no input. Usage: scripts/setup.sh [rust|browser|all]
set -euo pipefail
want="${1:-all}"
log() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }

WASM_PACK_VERSION=0.15.1
WASM_BINDGEN_VERSION=0.2.130

export PATH="$HOME/.cargo/bin:$PATH"

if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
  log "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi
[ "$want" = rust ] && exit 0

if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  log "installing Debian chromium + chromium-driver"
  export DEBIAN_FRONTEND=noninteractive
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq chromium chromium-driver >/dev/null
fi

if ! wasm-pack --version 2>/dev/null | grep -q "$WASM_PACK_VERSION"; then
  log "installing wasm-pack $WASM_PACK_VERSION (about 2 minutes)"
  cargo install --locked wasm-pack --version "$WASM_PACK_VERSION"
fi

if ! wasm-bindgen --version 2>/dev/null | grep -q "$WASM_BINDGEN_VERSION"; then
  log "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION (about 2 minutes)"
  # Not --locked: the registry here lacks one of its locked dependencies.
  cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION"
fi

if [ -f package-lock.json ]; then
  if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    log "installing JS dependencies (npm ci)"
    PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund
  fi
fi
log "tools ready"
