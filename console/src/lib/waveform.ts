// A clip's waveform: the loudest sample in each of `bars` slices of the
// decoded audio (0–1), for the player to draw. Clips over `MAX_BYTES` are
// not decoded (the browser would hold all of their samples); the player
// then shows a plain bar.

const MAX_BYTES = 25_000_000;
const cache = new Map<string, Promise<Float32Array | null>>();

async function decode(src: string, bars: number): Promise<Float32Array | null> {
  const res = await fetch(src);
  if (!res.ok) return null;
  const size = Number(res.headers.get("content-length") ?? 0);
  if (size > MAX_BYTES) return null;
  const bytes = await res.arrayBuffer();
  if (bytes.byteLength > MAX_BYTES) return null;
  const ctx = new OfflineAudioContext(1, 1, 8000);
  const audio = await ctx.decodeAudioData(bytes);
  const data = audio.getChannelData(0);
  const peaks = new Float32Array(bars);
  const step = Math.max(1, Math.floor(data.length / bars));
  let top = 0;
  for (let b = 0; b < bars; b++) {
    let peak = 0;
    const end = Math.min(data.length, (b + 1) * step);
    for (let i = b * step; i < end; i++) peak = Math.max(peak, Math.abs(data[i]));
    peaks[b] = peak;
    top = Math.max(top, peak);
  }
  if (top > 0) for (let b = 0; b < bars; b++) peaks[b] /= top;
  return peaks;
}

/** The peaks of the clip at `src` (remembered for the page's life). */
export function peaks(src: string, bars = 160): Promise<Float32Array | null> {
  const key = `${bars} ${src}`;
  let p = cache.get(key);
  if (!p) {
    p = decode(src, bars).catch(() => null);
    cache.set(key, p);
    if (cache.size > 40) cache.delete(cache.keys().next().value!);
  }
  return p;
}
