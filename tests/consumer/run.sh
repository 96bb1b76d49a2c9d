#!/usr/bin/env bash
# The package as a newcomer gets it: pack pkg/ into a tarball, install that tarball (with React,
# package.json: tab-outbox/react is tested too) into this
# small Vite app, type-check the app (`tsc`, as `tsc && vite build` does), build it for
# production, then serve the build on loopback and drive it with Playwright (the page,
# a dedicated module worker and a module service worker). Needs a built pkg/ (scripts/build.sh).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$here"
rm -rf pack dist node_modules
mkdir -p pack
echo "[consumer] npm pack ./pkg"
(cd "$root" && npm pack ./pkg --pack-destination "$here/pack" --silent >/dev/null)
tarball="$(ls pack/tab-outbox-*.tgz)"
echo "[consumer] npm install $tarball"
npm install --no-save --no-package-lock --no-audit --no-fund --silent "./$tarball"
echo "[consumer] tsc"
node "$root/node_modules/typescript/bin/tsc" -p tsconfig.json
echo "[consumer] vite build"
node "$root/node_modules/vite/bin/vite.js" build --logLevel warn
echo "[consumer] Playwright against the served build"
cd "$root"
npx playwright test -c tests/consumer/playwright.config.ts
