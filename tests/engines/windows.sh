#!/usr/bin/env bash
# Two windows of one origin in Firefox ESR and WebKitGTK, driven through WebDriver against
# the gate serving the demo app (tests/engines/windows.test.mjs). Usage:
# tests/engines/windows.sh [firefox] [webkit] (both when no argument). Needs
# `scripts/setup.sh engines` and a build (scripts/build.sh --gate: pkg/ and the gate binary).
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/engines/lib.sh
engines=("$@"); [ ${#engines[@]} -eq 0 ] && engines=(firefox webkit)
[ -x target/release/outbox-gate ] && [ -f pkg/outbox_idb.js ] || { echo "build first: scripts/build.sh --gate" >&2; exit 1; }

# Every process started here runs in a process group of its own, stopped on exit.
pgids=()
cleanup() { for g in "${pgids[@]}"; do kill -- -"$g" 2>/dev/null || true; done; }
trap cleanup EXIT
free_port; GATE_PORT="$FREE_PORT"
setsid target/release/outbox-gate --addr "127.0.0.1:$GATE_PORT" --db :memory: --test-endpoints --www www --pkg pkg \
  >"${TMPDIR:-/tmp}/engines-gate-$GATE_PORT.log" 2>&1 &
pgids+=($!)
wait_http "http://127.0.0.1:$GATE_PORT/" $!

for engine in "${engines[@]}"; do
  case "$engine" in
    firefox)
      free_port; port="$FREE_PORT"; free_port
      # Its BiDi port (default 9222) may be taken by another browser here.
      setsid geckodriver --port "$port" --websocket-port "$FREE_PORT" >"${TMPDIR:-/tmp}/geckodriver-$port.log" 2>&1 &
      pgids+=($!)
      wait_http "http://127.0.0.1:$port/status" $!
      ;;
    webkit)
      free_port; port="$FREE_PORT"
      start_webkit_driver "$port"
      pgids+=("$WEBKIT_DRIVER_PGID")
      trap cleanup EXIT
      ;;
    *) echo "unknown engine: $engine (firefox, webkit)" >&2; exit 2 ;;
  esac
  echo "[engines] two windows in $engine"
  ENGINE="$engine" DRIVER_URL="http://127.0.0.1:$port" BASE_URL="http://127.0.0.1:$GATE_PORT" MINIBROWSER="$(minibrowser)" \
    node --test --test-concurrency=1 tests/engines/windows.test.mjs
done
