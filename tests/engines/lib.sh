# Shared by the engine runners: where WebKitGTK's MiniBrowser is, and a WebKitWebDriver
# under Xvfb that is stopped (its whole process group) when the calling script exits.

# free_port: the first port from ENGINES_PORT_MIN (default 8794) that nothing listens on
# (other suites on this machine may hold some; a taken port would send the tests to
# someone else's server). Each call skips the ports it handed out before.
ENGINES_NEXT_PORT="${ENGINES_PORT_MIN:-8794}"
free_port() {
  local p="$ENGINES_NEXT_PORT"
  while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done
  ENGINES_NEXT_PORT=$((p + 1))
  FREE_PORT="$p"
}

# wait_http URL PID: waits until URL answers while process PID (ours) is alive.
wait_http() {
  for _ in $(seq 1 100); do
    kill -0 "$2" 2>/dev/null || { echo "the server for $1 exited" >&2; return 1; }
    curl -sf "$1" >/dev/null && return 0
    sleep 0.1
  done
  echo "nothing answers at $1" >&2; return 1
}

# The MiniBrowser Debian's libwebkit2gtk-4.1-0 installs (its path names the architecture).
minibrowser() {
  dpkg -L libwebkit2gtk-4.1-0 | grep '/MiniBrowser$' | head -n1
}

# start_webkit_driver PORT: WebKitWebDriver on 127.0.0.1:PORT, under its own Xvfb display
# (MiniBrowser has no headless mode). Returns once the driver answers /status.
start_webkit_driver() {
  local port="$1"
  setsid xvfb-run -a WebKitWebDriver --port="$port" --replace-on-new-session \
    >"${TMPDIR:-/tmp}/webkitwebdriver-$port.log" 2>&1 &
  WEBKIT_DRIVER_PGID=$!
  trap 'kill -- -"$WEBKIT_DRIVER_PGID" 2>/dev/null || true' EXIT
  wait_http "http://127.0.0.1:$port/status" "$WEBKIT_DRIVER_PGID" || {
    cat "${TMPDIR:-/tmp}/webkitwebdriver-$port.log" >&2
    return 1
  }
}
