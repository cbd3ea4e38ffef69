"""The speech-to-text corpus of bench/stt.sh: clips made afresh from a seed
(the sentences drawn and ordered by it) and transcribed by our endpoint, by
our engine alone (stt_bench) and by faster-whisper, with both WERs, the
ratio per clip and the geometric mean.

Usage: corpus.py PORT KEY MODELS FW_PYTHON STT_BENCH WORK SEED
Clips: espeak-ng variants, Kokoro, Piper; dense and sparse speech; speech over
a music bed and over noise; two speakers; Spanish; 20 s to 10 min."""
import array
import json
import math
import os
import random
import subprocess
import sys
import time
import wave

sys.path.insert(0, "bench/stt")
import client  # noqa: E402
from wer import wer  # noqa: E402

port, key, models, fw_python, stt_bench, work, seed = sys.argv[1:8]
rng = random.Random(int(seed))
RATE = 16_000

english = []
for f in ["bench/stt/part1.txt", "bench/stt/part2.txt", "bench/sentences.txt"]:
    text = open(f).read().replace("\n", " ")
    english += [s.strip() + "." for s in text.split(".") if len(s.split()) >= 4]
spanish = [
    "El tren salió de la estación con una hora de retraso.",
    "Cuando llegamos a la costa, la lluvia ya había parado.",
    "Todo el pueblo paseaba junto al puerto al caer la tarde.",
    "Mi abuela guardaba las cartas de su hermano en una caja de madera.",
    "Los niños jugaban en la plaza mientras los mayores hablaban.",
    "El mercado abre temprano y cierra antes del mediodía.",
    "Aprendí a cocinar mirando a mi padre los domingos.",
    "La biblioteca nueva tiene libros en más de veinte idiomas.",
    "Esa noche el cielo estaba tan claro que se veían todas las estrellas.",
    "Mañana volveremos a casa por el camino de las montañas.",
    "El médico dijo que caminar cada día es la mejor medicina.",
    "Pintaron la fachada de la escuela con colores muy alegres.",
]


def voice(query):
    _, data = client.request(port, "GET", "/v1/voices?" + query, key)
    return json.loads(data)["data"][0]["id"]


def pcm_of(path):
    """16 kHz mono 16-bit samples of any audio file."""
    raw = subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-f", "s16le", "-ac", "1", "-ar",
                          str(RATE), "-"], check=True, capture_output=True).stdout
    return array.array("h", raw)


def save(path, samples):
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(samples.tobytes())


def say_api(voice_id, text, out):
    """Our text-to-speech endpoint (5000 characters a request)."""
    parts, cur = [], ""
    for s in text.split(". "):
        if len(cur) + len(s) > 4000:
            parts.append(cur)
            cur = ""
        cur += s + ". "
    parts.append(cur)
    samples = array.array("h")
    for k, p in enumerate(parts):
        tmp = f"{work}/part{k}.txt"
        open(tmp, "w").write(p)
        client_main(["tts", voice_id, tmp, f"{work}/part.wav"])
        samples += pcm_of(f"{work}/part.wav")
    save(out, samples)


def client_main(args):
    sys.argv = ["client.py", args[0], port, key] + args[1:]
    client.main()


def say_espeak(variant, speed, text, out):
    tmp = f"{work}/espeak.txt"
    open(tmp, "w").write(text)
    subprocess.run(["espeak-ng", "-v", variant, "-s", str(speed), "-f", tmp, "-w", f"{work}/espeak.wav"],
                   check=True)
    save(out, pcm_of(f"{work}/espeak.wav"))


decks = {}


def sentences(pool, seconds, words_per_second=2.6):
    """Sentences drawn from `pool` for about `seconds` of speech: dealt
    from a shuffled deck, so none comes twice before all have come once
    (people rarely say a sentence twice in a row)."""
    out, words = [], 0
    while words < seconds * words_per_second:
        deck = decks.setdefault(id(pool), [])
        if not deck:
            deck.extend(rng.sample(pool, len(pool)))
        s = deck.pop()
        out.append(s)
        words += len(s.split())
    return out


def with_pauses(pieces, pause):
    """Pieces of speech (sample arrays) joined by `pause(k)` seconds."""
    out = array.array("h")
    for k, p in enumerate(pieces):
        out += p
        out += array.array("h", bytes(2 * int(pause(k) * RATE)))
    return out


def bed(path, kind, out):
    """Speech over a music bed or noise, 12-15 dB below it."""
    src = {"music": "aevalsrc='0.05*sin(2*PI*220*t)*(1+0.5*sin(2*PI*0.5*t))+0.04*sin(2*PI*277.2*t)"
                    "+0.04*sin(2*PI*329.6*t)+0.03*sin(2*PI*110*t)*(0.5+0.5*sin(2*PI*2*t))':s=16000",
           "noise": "anoisesrc=color=pink:amplitude=0.06:sample_rate=16000:seed=" + seed}[kind]
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", path, "-f", "lavfi", "-i", src, "-filter_complex",
                    "[0][1]amix=inputs=2:duration=first:normalize=0", "-ar", "16000", "-ac", "1", out],
                   check=True)


heart, emma = voice("engine=kokoro&q=heart"), voice("engine=kokoro&language=en-GB&gender=female")
joe, dora = voice("engine=piper"), voice("engine=kokoro&language=es")
clips = []


def clip(name, language, text, make):
    path = f"{work}/{name}.wav"
    make(path)
    clips.append((name, language, " ".join(text) if isinstance(text, list) else text, path))


t = sentences(english, 20)
clip("espeak-us-20s", "en", t, lambda p: say_espeak("en-us", 165, " ".join(t), p))
t2 = sentences(english, 70)
clip("espeak-rp-dense", "en", t2, lambda p: say_espeak("en-gb-x-rp", 190, " ".join(t2), p))


def sparse(p, text=sentences(english, 60)):
    pieces = []
    for s in text:
        say_espeak("en-gb-scotland+f3", 160, s, p)
        pieces.append(pcm_of(p))
    save(p, with_pauses(pieces, lambda k: rng.uniform(1.5, 4.0)))
    return text


t3 = sparse(f"{work}/espeak-scotland-sparse.wav")
clips.append(("espeak-scotland-sparse", "en", " ".join(t3), f"{work}/espeak-scotland-sparse.wav"))
t4 = sentences(english, 100)
clip("kokoro-gb", "en", t4, lambda p: say_api(emma, " ".join(t4), p))
t5 = sentences(english, 120)


def music(p):
    say_api(heart, " ".join(t5), p + ".dry.wav")
    bed(p + ".dry.wav", "music", p)


clip("kokoro-us-music", "en", t5, music)
t6 = sentences(english, 60)


def noisy(p):
    say_api(joe, " ".join(t6), p + ".dry.wav")
    bed(p + ".dry.wav", "noise", p)


clip("piper-noise", "en", t6, noisy)
t7 = sentences(english, 90)


def two(p):
    pieces = []
    for k, s in enumerate(t7):
        say_api(heart if k % 2 == 0 else joe, s, p)
        pieces.append(pcm_of(p))
    save(p, with_pauses(pieces, lambda k: rng.uniform(0.2, 0.8)))


clip("two-speakers", "en", t7, two)
t8 = sentences(spanish, 45, 2.4)
clip("kokoro-spanish", "es", t8, lambda p: say_api(dora, " ".join(t8), p))
t9 = sentences(english, 600)
clip("piper-long", "en", t9, lambda p: say_api(joe, " ".join(t9), p))

print(f"## Speech-to-text corpus, seed {seed}, base model, beam 5, 2 threads, {time.strftime('%Y-%m-%d')}")
print("| clip | audio s | ours, request s | ours, engine s | faster-whisper s | ratio (request / peer) | "
      "WER ours | WER peer |")
print("|---|---|---|---|---|---|---|---|")
ratios, slower = [], []
# One untimed request first: the server's first recognition pays for the
# runtime's first allocations, as faster-whisper's model load (outside its
# timing) does; each clip is then timed on a warm server.
body, ctype = client.multipart(clips[0][3], {"language": clips[0][1], "model": "base"})
client.request(port, "POST", "/v1/speech-to-text", key, body, ctype)
for name, language, text, path in clips:
    ref = f"{work}/{name}.ref.txt"
    open(ref, "w").write(text)
    body, ctype = client.multipart(path, {"language": language, "model": "base"})
    t0 = time.perf_counter()
    status, data = client.request(port, "POST", "/v1/speech-to-text", key, body, ctype)
    ours_s = time.perf_counter() - t0
    job = json.loads(data)
    assert status == 200, (status, job)
    ours_text = job["result"]["text"]
    open(f"{work}/{name}.ours.txt", "w").write(ours_text)
    engine = subprocess.run([stt_bench, models, "base", os.path.abspath(path)], capture_output=True, text=True,
                            env=dict(os.environ, LANGUAGE=language, RUNS="2")).stdout
    engine_s = float(engine.split("seconds=")[1].split()[0]) if "seconds=" in engine else float("nan")
    peer = subprocess.run([fw_python, "bench/stt/faster_whisper_peer.py", f"{models}/whisper/base", path,
                           f"{work}/{name}.fw.txt", "2", language], capture_output=True, text=True).stdout
    peer_s = float(peer.split("seconds=")[1].split()[0])
    audio = float(peer.split("audio=")[1].split()[0])
    ratio = ours_s / peer_s
    ratios.append(ratio)
    if ratio > 0.8:
        slower.append(name)
    w_ours, w_peer = wer(text, ours_text), wer(text, open(f"{work}/{name}.fw.txt").read())
    print(f"| {name} | {audio:.0f} | {ours_s:.2f} | {engine_s:.2f} | {peer_s:.2f} | {ratio:.2f} | "
          f"{100 * w_ours:.1f} % | {100 * w_peer:.1f} % |", flush=True)
geomean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
print(f"geometric mean of the ratios: {geomean:.2f} (target at most 0.70)")
print("clips over 0.8x faster-whisper's time: " + (", ".join(slower) if slower else "none"))
