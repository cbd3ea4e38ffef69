#!/usr/bin/env bash
# Builds the web console (console/: Svelte and TypeScript, built by Vite
# from the npm packages its package-lock.json pins) into console/dist,
# which the server build embeds (crates/server/build.rs). Runs `npm ci`
# when the lock file is newer than the installed packages, and the build
# when any source is newer than the last one. Usage: scripts/build-console.sh
set -euo pipefail
cd "$(dirname "$0")/../console"
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "build-console: installing the console's npm packages" >&2
  npm ci --silent --no-audit --no-fund
fi
if [ ! -f dist/index.html ] || [ -n "$(find src public index.html vite.config.ts svelte.config.js package-lock.json -newer dist/index.html -print -quit)" ]; then
  echo "build-console: building console/dist" >&2
  npm run --silent build -- --logLevel warn
fi
