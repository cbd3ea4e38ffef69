#!/usr/bin/env bash
# Makes sure what the console's browser tests need is installed: Debian's
# chromium (with a font to draw text), and, from npm at the versions that
# tests/console/package-lock.json pins, playwright-core (the driver) and
# axe-core (the accessibility check) under tests/console/node_modules.
# Test-only: `make run` never installs a browser.
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=$([ "$(id -u)" -ne 0 ] && echo sudo || true)
missing=()
for pkg in chromium fonts-dejavu-core; do dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "ensure-chromium: installing ${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if [ ! -f tests/console/node_modules/playwright-core/package.json ] || [ ! -f tests/console/node_modules/axe-core/axe.min.js ] \
  || [ tests/console/package-lock.json -nt tests/console/node_modules/.package-lock.json ]; then
  echo "ensure-chromium: installing playwright-core and axe-core (npm) into tests/console" >&2
  (cd tests/console && npm ci --silent --no-audit --no-fund --ignore-scripts)
fi
