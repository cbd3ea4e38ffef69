#!/usr/bin/env bash
# Neural diffusion path on the tiny random-weight models (`mediagen models
# tiny`): per-step time of the denoising loop (two UNet evaluations a step,
# classifier-free guidance) and whole-image time, ours
# (examples/diffusion_bench, Rust + ONNX Runtime) beside the same models run
# from Python with the same ONNX Runtime release and numpy
# (bench/diffusion_peer.py). Three runs each, medians. Usage: bench/diffusion.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked --quiet --bin mediagen --example diffusion_bench
venv=target/bench/diffusion-venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet onnxruntime==1.31.1 numpy
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
./target/release/mediagen models tiny "$work" >/dev/null
steps=20
median() { python3 -c "import statistics,sys; print(round(statistics.median(map(float, sys.argv[1:])), 2))" "$@"; }
echo "## Diffusion pipeline on the tiny models, $(date -u +%F), $steps steps with guidance (ms, median of 3)"
for size in 512 1024; do
  ours_step=(); ours_total=(); peer_step=(); peer_total=()
  for _ in 1 2 3; do
    line=$(./target/release/examples/diffusion_bench models $size $steps 10 | grep '^image')
    ours_step+=("$(sed -E 's/.*per step ([0-9.]+) ms.*/\1/' <<<"$line")")
    ours_total+=("$(sed -E 's/.*with guidance: ([0-9.]+) s;.*/\1/' <<<"$line" | python3 -c 'import sys; print(float(sys.stdin.read()) * 1000)')")
    json=$("$venv/bin/python" bench/diffusion_peer.py "$work/image/tiny-sd" $size $steps)
    peer_step+=("$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["perStep"])' "$json")")
    peer_total+=("$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["total"])' "$json")")
  done
  os=$(median "${ours_step[@]}"); ps=$(median "${peer_step[@]}")
  ot=$(median "${ours_total[@]}"); pt=$(median "${peer_total[@]}")
  echo "${size}x${size}: per step ours $os, peer $ps (peer/ours $(python3 -c "print(round($ps / $os, 2))")); whole image ours $ot, peer $pt (peer/ours $(python3 -c "print(round($pt / $ot, 2))"))"
done
for _ in 1 2 3; do ./target/release/examples/diffusion_bench models 512 $steps 10 | grep '^sound'; done
