#!/usr/bin/env bash
# Image generation latency: each request timed whole (HTTP, scene, drawing,
# PNG encoding, storage) on a release server, five runs per prompt and
# size, medians; and the engine alone (examples/image_bench: parse, render,
# PNG). Usage: bench/image.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
cargo build --release --locked --quiet --bin mediagen --example image_bench
port=18195
start_server $port
median() { python3 -c "import statistics,sys; print(round(statistics.median(map(float, sys.argv[1:])) * 1000))" "$@"; }
ours() {
  local t0; t0=$(now)
  curl -sf "http://127.0.0.1:$port/v1/image-generation" -H "Authorization: Bearer $key" \
    -H 'Content-Type: application/json' \
    -d "{\"prompt\":\"$1\",\"width\":$2,\"height\":$2,\"seed\":1$3}" >/dev/null
  python3 -c "print($(now) - $t0)"
}
echo "## Image generation latency, $(date -u +%F) (median of 5, ms)"
for prompt in "a cat wearing a red hat on a beach at sunset" "two dogs next to a tree in a snowy forest" \
  "a robot under a rainbow in the city at night"; do
  for size in 512 1024; do
    flat=$(median $(for _ in 1 2 3 4 5; do ours "$prompt" $size ""; done))
    water=$(median $(for _ in 1 2 3 4 5; do ours "$prompt" $size ',"style":"watercolor"'; done))
    echo "\"$prompt\" ${size}x${size}: ${flat} ms flat, ${water} ms watercolor"
  done
done
for size in 512 1024; do
  ./target/release/examples/image_bench models "a cat wearing a red hat on a beach at sunset" $size | head -1
done
