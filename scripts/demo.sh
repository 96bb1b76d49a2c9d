#!/usr/bin/env bash
# Runs the demo app: builds the package and the gate (installing what is missing), then
# serves the app, the package and the gate's API on http://127.0.0.1:${PORT:-8787}/.
#   scripts/demo.sh        the demo app (www/)
#   scripts/demo.sh todo   the to-do example instead (docs/examples/todo/)
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  "") WWW=www PAGE="/" ;;
  todo) WWW=docs/examples PAGE="/todo/index.html?user=alice" ;;
  *) echo "usage: scripts/demo.sh [todo]" >&2; exit 2 ;;
esac
scripts/build.sh --gate
PORT="${PORT:-8787}"
DB="${DB:-target/demo-ledger.sqlite}"
echo
echo "  Open http://127.0.0.1:${PORT}${PAGE}   in two tabs (Ctrl-C stops)"
echo
# No --test-endpoints: the demo's own buttons need none of them, and /api/effects would list
# every actor's operation ids to anyone who can reach the port.
exec target/release/outbox-gate --addr "127.0.0.1:${PORT}" --db "$DB" --www "$WWW" --pkg pkg
