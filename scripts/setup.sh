#!/usr/bin/env bash
# Installs what the project needs, skipping whatever is already present at the right
# version. Safe to run again and again; needs no input.
# Usage: scripts/setup.sh [rust|browser|all|engines|bench]
#   engines: the other two browser engines (Firefox ESR + geckodriver, WebKitGTK's
#   WebKitWebDriver + MiniBrowser under Xvfb), for tests/engines/.
#   bench: twiggy, for the benchmark's breakdown of the wasm module's size.
set -euo pipefail
want="${1:-all}"
log() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }

WASM_PACK_VERSION=0.15.1
WASM_BINDGEN_VERSION=0.2.130
GECKODRIVER_VERSION=0.37.1
TWIGGY_VERSION=0.8.0

export PATH="$HOME/.cargo/bin:$PATH"

if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
  log "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi
# The standard library's source: scripts/build.sh builds std for size with the package.
if ! rustup component list --installed 2>/dev/null | grep -qx rust-src; then
  log "adding the rust-src component"
  rustup component add rust-src
fi
[ "$want" = rust ] && exit 0

apt_install() {
  export DEBIAN_FRONTEND=noninteractive
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq "$@" >/dev/null
}

if [ "$want" = bench ]; then
  # The benchmark's size breakdown (scripts/wasm-breakdown.mjs) reads the module with twiggy.
  if ! twiggy --version 2>/dev/null | grep -q "$TWIGGY_VERSION"; then
    log "installing twiggy $TWIGGY_VERSION (about 2 minutes)"
    cargo install --locked twiggy --version "$TWIGGY_VERSION"
  fi
  exit 0
fi

if [ "$want" = engines ]; then
  # Debian's packages, never a downloaded browser: the npm geckodriver package and
  # Playwright's own Firefox/WebKit builds download binaries at install.
  if ! command -v firefox-esr >/dev/null || ! command -v WebKitWebDriver >/dev/null \
    || ! command -v xvfb-run >/dev/null || ! command -v xauth >/dev/null; then
    log "installing Debian firefox-esr, webkit2gtk-driver, xvfb (about 1 minute)"
    apt_install firefox-esr webkit2gtk-driver xvfb xauth
  fi
  if ! geckodriver --version 2>/dev/null | grep -q "$GECKODRIVER_VERSION"; then
    log "installing geckodriver $GECKODRIVER_VERSION (about 3 minutes)"
    cargo install --locked geckodriver --version "$GECKODRIVER_VERSION"
  fi
  log "engines ready: $(firefox-esr --version), geckodriver $GECKODRIVER_VERSION, WebKitGTK $(dpkg-query -W -f '${Version}' libwebkit2gtk-4.1-0)"
  exit 0
fi

if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  log "installing Debian chromium + chromium-driver"
  apt_install chromium chromium-driver
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

# The stamp is the lock file's content, not its time: a fresh clone or git worktree has a
# newer lock file than an installed node_modules (a worktree may share one by a symlink),
# and `npm ci` there would wipe and reinstall what is already right.
if [ -f package-lock.json ]; then
  lock_sum="$(sha256sum package-lock.json | cut -d' ' -f1)"
  if [ ! -d node_modules ] || [ "$(cat node_modules/.outbox-lock.sha256 2>/dev/null)" != "$lock_sum" ]; then
    log "installing JS dependencies (npm ci)"
    PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund
    echo "$lock_sum" > node_modules/.outbox-lock.sha256
  fi
fi
log "tools ready"
