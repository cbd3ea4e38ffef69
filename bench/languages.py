"""Round trip of every voice of a language: each held-out sentence of
bench/languages/<lang>.txt spoken by the voice (POST /v1/text-to-speech,
wav) and heard again by our recogniser told the language (POST
/v1/speech-to-text): the character error rate (Japanese, Chinese) or the
word error rate, per voice and over all. Usage (bench/languages.sh runs
it): languages.py BASE_URL KEY LANG [ENGINE...]"""
import json
import re
import subprocess
import sys
import unicodedata
import urllib.request

base, key, lang = sys.argv[1:4]
engines = sys.argv[4:] or ["kokoro", "espeak"]
by_char = lang in ("ja", "zh")
if lang == "zh":
    # whisper writes Chinese in either script and numbers in digits: both
    # sides are folded to simplified characters with numbers in words
    # (what the voices read) before counting (bench/languages.sh installs
    # zhconv and cn2an for this).
    import cn2an
    import zhconv

    def fold(text):
        return zhconv.convert(cn2an.transform(text, "an2cn"), "zh-cn")
else:
    def fold(text):
        return text


def call(path, body=None, parts=None):
    args = ["curl", "-sS", "-f", "-X", "POST" if body or parts else "GET", base + path,
            "-H", f"Authorization: Bearer {key}"]
    if body is not None:
        args += ["-H", "Content-Type: application/json", "-d", json.dumps(body)]
    for name, value in parts or []:
        args += ["-F", f"{name}={value}"]
    return json.loads(subprocess.run(args, capture_output=True, check=True).stdout)


def units(text):
    text = fold(unicodedata.normalize("NFKC", text)).lower()
    if by_char:
        return [c for c in text if c.isalnum()]
    return re.sub(r"[^\w\s']", " ", text).split()


def edits(a, b):
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        diagonal, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            diagonal, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, diagonal + (x != y))
    return row[-1]


sentences = [s.strip() for s in open(f"bench/languages/{lang}.txt", encoding="utf-8") if s.strip()]
total = [0, 0]
for engine in engines:
    # espeak-ng tags its Mandarin voice cmn (ISO 639-3), Kokoro zh-CN.
    tags = [lang, "cmn"] if lang == "zh" else [lang]
    voices = [v for tag in tags for v in call(f"/v1/voices?language={tag}&engine={engine}&limit=100")["data"]]
    for voice in voices:
        wrong = count = 0
        refused = 0
        for text in sentences:
            ref = units(text)
            count += len(ref)
            try:
                job = call("/v1/text-to-speech", {"text": text, "voiceId": voice["id"], "format": "wav"})
            except subprocess.CalledProcessError:
                # Refused (a voice that runs past its ceiling): all wrong.
                refused += 1
                wrong += len(ref)
                continue
            with urllib.request.urlopen(job["result"]["audioUrl"]) as r, open("target/bench/languages.wav", "wb") as f:
                f.write(r.read())
            heard = call("/v1/speech-to-text", parts=[("file", "@target/bench/languages.wav"), ("language", lang)])
            wrong += edits(ref, units(heard["result"]["text"]))
        if engine == engines[0]:
            total[0] += wrong
            total[1] += count
        rate = "CER" if by_char else "WER"
        note = f" ({refused} of {len(sentences)} refused, counted wrong)" if refused else ""
        print(f"| {lang} | {engine} | {voice['name']} ({voice['gender']}) | {rate} {100 * wrong / count:.1f} %{note} |", flush=True)
print(f"{lang}, {engines[0]} voices together: {'CER' if by_char else 'WER'} {100 * total[0] / max(total[1], 1):.1f} % "
      f"over {len(sentences)} sentences each")
