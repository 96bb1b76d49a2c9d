#!/usr/bin/env bash
# Runs a command against a throwaway PostgreSQL 15 cluster on loopback, then stops and
# removes the cluster (also on failure or Ctrl-C). Installs PostgreSQL if missing. Usage:
#   scripts/pg.sh cargo test -p outbox-gate --features postgres-tests
# The command sees DATABASE_URL (postgres://postgres@127.0.0.1:$PG_PORT/postgres).
# PostgreSQL refuses to run as root: as root, the cluster runs as the `postgres` user that
# Debian's package creates. PG_PORT picks the port (25432: below Linux's ephemeral range,
# 32768-60999, where the test run's own outgoing connections took 55432 twice on 2026-12-07
# and the cluster could not start).
set -euo pipefail
cd "$(dirname "$0")/.."
PG_PORT="${PG_PORT:-25432}"
BIN="${PG_BIN:-/usr/lib/postgresql/15/bin}"

if [ ! -x "$BIN/pg_ctl" ]; then
  echo "[pg] installing PostgreSQL (apt-get install postgresql)" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y postgresql >/dev/null || { apt-get update >/dev/null && apt-get install -y postgresql >/dev/null; }
fi
[ -x "$BIN/pg_ctl" ] || { echo "[pg] no PostgreSQL 15 binaries in $BIN (set PG_BIN)" >&2; exit 1; }

as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

dir="$(mktemp -d "${TMPDIR:-/tmp}/outbox-pg.XXXXXX")"
[ "$(id -u)" = 0 ] && chown postgres: "$dir"
stop() {
  as_pg "$BIN/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap stop EXIT
trap 'exit 130' INT TERM

as_pg "$BIN/initdb" -D "$dir/data" -U postgres -A trust --no-sync >"$dir/initdb.log" 2>&1 \
  || { cat "$dir/initdb.log" >&2; exit 1; }
# Loopback only, socket in the temp dir; max_connections covers several gate processes.
if ! as_pg "$BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 start \
  -o "-p $PG_PORT -k $dir -c listen_addresses=127.0.0.1 -c max_connections=200" >/dev/null; then
  cat "$dir/server.log" >&2
  echo "[pg] could not start PostgreSQL on 127.0.0.1:$PG_PORT (port taken? set PG_PORT)" >&2
  exit 1
fi
export DATABASE_URL="postgres://postgres@127.0.0.1:$PG_PORT/postgres"
echo "[pg] PostgreSQL $("$BIN/postgres" --version | awk '{print $3}') on $DATABASE_URL (data in $dir)" >&2
"$@"
