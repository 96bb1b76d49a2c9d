#!/usr/bin/env bash
# The binding's wasm-bindgen tests (crates/outbox-idb/tests) in Firefox ESR and WebKitGTK,
# as step 6 runs them in Chromium. Usage: tests/engines/binding.sh [firefox] [webkit]
# (both when no argument). Needs `scripts/setup.sh engines`.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$HOME/.cargo/bin:$PATH"
source tests/engines/lib.sh
engines=("$@"); [ ${#engines[@]} -eq 0 ] && engines=(firefox webkit)
# The runner's limit is for a whole test file (default 20 s); values.rs walks a value of a
# million parts, which takes Firefox and WebKit up to ~20 s in a debug build.
export WASM_BINDGEN_TEST_TIMEOUT="${WASM_BINDGEN_TEST_TIMEOUT:-120}"
# The debug test build's wasm stack, as scripts/test.sh step 6 sets it (see there).
export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS="${CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS:--C link-arg=-zstack-size=16777216}"
caps="$(mktemp -d)"
trap 'rm -rf "$caps"' EXIT

for engine in "${engines[@]}"; do
  case "$engine" in
    firefox)
      echo "[engines] binding tests in headless Firefox ($(firefox-esr --version))"
      printf '{"moz:firefoxOptions": {"binary": "%s"}}\n' "$(command -v firefox-esr)" >"$caps/firefox.json"
      # wasm-pack adds -headless; the capabilities name Debian's binary (firefox-esr).
      # geckodriver's BiDi port (default 9222) may be taken by another browser here.
      free_port
      GECKODRIVER_ARGS="--websocket-port $FREE_PORT" WASM_BINDGEN_TEST_WEBDRIVER_JSON="$caps/firefox.json" \
        wasm-pack test --headless --firefox --geckodriver "$(command -v geckodriver)" --mode no-install crates/outbox-idb
      ;;
    webkit)
      echo "[engines] binding tests in WebKitGTK $(dpkg-query -W -f '${Version}' libwebkit2gtk-4.1-0) (MiniBrowser under Xvfb)"
      # KNOWN FLAKE, cause not found (2026-12-02): in some full CI runs one test file of
      # the debug build trapped or stalled in WebKitGTK ("Out of bounds memory access", a
      # test "not detected as run", a flush still running after 3 s, a file that "exited
      # abnormally"), a different file each time (the runner prints "Firefox": it drives
      # WebKitWebDriver through its geckodriver client). Four of nine runs on 2026-12-02,
      # none in the 9 runs after that afternoon's turn fixes, then two of three full runs on
      # 2026-12-03. So every file runs (--no-fail-fast), and only the files that failed run
      # once more, loudly: rerunning the whole suite (as until 2026-12-03) gave the flake a
      # second chance at every file, and a second hit failed CI. A file that fails twice
      # fails the run. The "Out of bounds" trap remains unexplained (the debug build's stack
      # is first in memory, so an overflow traps like this).
      webkit_run() {
      free_port; port="$FREE_PORT"
      (
        start_webkit_driver "$port"
        printf '{"webkitgtk:browserOptions": {"binary": "%s", "args": ["--automation"]}}\n' "$(minibrowser)" >"$caps/webkit.json"
        # wasm-bindgen-test-runner has no WebKitGTK driver of its own. Its geckodriver client
        # speaks plain W3C WebDriver and sends webdriver.json as the session's capabilities
        # (its safaridriver client sends none), so it drives WebKitWebDriver as a "remote
        # geckodriver"; WebKitWebDriver ignores the moz:firefoxOptions it adds.
        GECKODRIVER_REMOTE="http://127.0.0.1:$port" WASM_BINDGEN_TEST_WEBDRIVER_JSON="$caps/webkit.json" \
          CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner \
          cargo test -p outbox-idb --target wasm32-unknown-unknown --no-fail-fast "$@"
      ) 2>&1 | tee "$caps/webkit.log"
      }
      if ! webkit_run; then
        # cargo ends a --no-fail-fast run with the targets that failed, one per line:
        # "    `--test browser`" (or "`--lib`"). None listed (the build failed, say): all again.
        mapfile -t failed < <(grep -oE '^ +`(--test [A-Za-z0-9_]+|--lib)`$' "$caps/webkit.log" | tr -d ' `' | sed 's/^--test/--test /')
        again=()
        for f in "${failed[@]}"; do read -r -a parts <<<"$f"; again+=("${parts[@]}"); done
        echo "[engines] FLAKE: binding tests failed in WebKitGTK (${failed[*]:-the whole run}); running ${failed[*]:-them all} once more" >&2
        webkit_run "${again[@]}"
      fi
      ;;
    *) echo "unknown engine: $engine (firefox, webkit)" >&2; exit 2 ;;
  esac
done
