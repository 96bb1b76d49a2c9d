# Shared by the engine runners: where WebKitGTK's MiniBrowser is, and a WebKitWebDriver
# under Xvfb that is stopped (its whole process group) when the calling script exits.

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
  for _ in $(seq 1 100); do
    curl -sf "http://127.0.0.1:$port/status" >/dev/null && return 0
    sleep 0.1
  done
  echo "WebKitWebDriver did not start on port $port:" >&2
  cat "${TMPDIR:-/tmp}/webkitwebdriver-$port.log" >&2
  return 1
}
