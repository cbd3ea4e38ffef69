"""Live sessions against a running server (bench/realtime.sh starts one).

  stt BASE KEY WAV SESSIONS SILENCE_MS
      SESSIONS sessions at once, each fed WAV (16-kHz mono) in 100-ms frames
      at real-time pace. Per session: the median lag of a word's first
      appearance (in a partial or a commit) after its end in the sound, the
      median lag of each turn's final commit after its last word's end (and
      of the pieces a long turn is cut into while it goes on), and
      whether the session kept up (its last commit within 3 s of the
      sound's end). Word ends are the committed words' own times.
  tts BASE KEY VOICE
      TEXT fed word by word at 15 words a second (as a language model
      writes); per sentence, the time from its last word sent to its first
      audio, beside the sentence's own synthesis alone
      (POST /v1/text-to-speech, pcm, the fastest of three).

Prints one JSON object.
"""

import asyncio
import json
import statistics
import sys
import time
import urllib.request
import wave

import websockets

TEXT = (
    "The weather is lovely today. Shall we walk down to the river after lunch? "
    "I will bring the camera, and you can bring the map. We should be back before it gets dark."
)


def ws_url(base, path, query):
    return base.replace("http://", "ws://") + path + "?" + query


async def stt_session(base, key, pcm, silence):
    url = ws_url(base, "/v1/speech-to-text/realtime", f"language=en&sampleRate=16000&silenceMs={silence}")
    events = []
    async with websockets.connect(url, additional_headers={"Authorization": f"Bearer {key}"}, max_size=None) as ws:
        started = json.loads(await ws.recv())
        assert started["type"] == "session.started", started
        t0 = time.monotonic()

        async def send():
            frame = 3200  # 100 ms
            for k, i in enumerate(range(0, len(pcm), frame)):
                await asyncio.sleep(max(0.0, t0 + (k + 1) * 0.1 - time.monotonic()))
                await ws.send(pcm[i:i + frame])
            await ws.send(json.dumps({"type": "finish"}))

        sender = asyncio.create_task(send())
        try:
            async for m in ws:
                if isinstance(m, str):
                    e = json.loads(m)
                    e["at"] = time.monotonic() - t0
                    events.append(e)
        except websockets.ConnectionClosed:
            pass
        await sender
    return events


def stt_figures(events, sound_end):
    committed = [e for e in events if e["type"] == "transcript.committed"]
    words = [w for c in committed for w in c["words"]]
    # Words heard by each event: the committed ones before it, and its own.
    first = [None] * len(words)
    done = 0
    for e in events:
        if e["type"] == "transcript.partial":
            n = done + len(e["text"].split())
        elif e["type"] == "transcript.committed":
            done += len(e["words"])
            n = done
        else:
            continue
        for i in range(min(n, len(words))):
            if first[i] is None:
                first[i] = e["at"]
    partial = [first[i] - w["end"] for i, w in enumerate(words) if first[i] is not None]
    lag = lambda c: c["at"] - c["words"][-1]["end"]
    commit = [lag(c) for c in committed if c["words"] and c.get("final", True)]
    cut = [lag(c) for c in committed if c["words"] and not c.get("final", True)]
    last = committed[-1]["at"] if committed else float("inf")
    return {
        "words": len(words),
        "turns": len(commit),
        "pieces": len(cut),
        "partial_lag_median": round(statistics.median(partial), 3) if partial else None,
        "commit_lag_median": round(statistics.median(commit), 3) if commit else None,
        "commit_lags": [round(x, 3) for x in commit],
        "cut_lags": [round(x, 3) for x in cut],
        "last_commit_after_sound": round(last - sound_end, 3),
        "kept_up": last - sound_end < 3.0,
        "text": " ".join(c["text"] for c in committed),
    }


async def stt(base, key, wav_path, sessions, silence):
    with wave.open(wav_path) as w:
        assert w.getframerate() == 16000 and w.getnchannels() == 1 and w.getsampwidth() == 2
        pcm = w.readframes(w.getnframes())
    sound_end = len(pcm) / 32000
    runs = await asyncio.gather(*(stt_session(base, key, pcm, silence) for _ in range(sessions)))
    return {"sessions": [stt_figures(e, sound_end) for e in runs], "seconds": sound_end}


def post(base, key, path, body):
    request = urllib.request.Request(
        base + path,
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request) as r:
        return json.loads(r.read())


async def tts(base, key, voice):
    sentences = [s.strip() + ("" if s.strip()[-1] in ".?!" else ".") for s in TEXT.replace("? ", "?|").replace(". ", ".|").split("|")]
    alone = []
    for s in sentences:
        best = float("inf")
        for _ in range(3):
            t = time.monotonic()
            job = post(base, key, "/v1/text-to-speech", {"text": s, "voiceId": voice, "format": "pcm"})
            assert job["status"] == "completed", job
            best = min(best, time.monotonic() - t)
        alone.append(best)
    url = ws_url(base, "/v1/text-to-speech/realtime", f"voiceId={voice}&format=pcm")
    ends, firsts = [], []
    async with websockets.connect(url, additional_headers={"Authorization": f"Bearer {key}"}, max_size=None) as ws:
        started = json.loads(await ws.recv())
        assert started["type"] == "session.started", started

        async def send():
            for word in TEXT.split(" "):
                await ws.send(json.dumps({"type": "text", "text": word + " "}))
                if word.endswith((".", "?", "!")):
                    ends.append(time.monotonic())
                await asyncio.sleep(1 / 15)
            await ws.send(json.dumps({"type": "finish"}))

        sender = asyncio.create_task(send())
        try:
            async for m in ws:
                if isinstance(m, str) and json.loads(m)["type"] == "audio":
                    firsts.append(time.monotonic())
        except websockets.ConnectionClosed:
            pass
        await sender
    lags = [f - e for e, f in zip(ends, firsts)]
    return {
        "voice": voice,
        "sentences": [
            {"text": s, "first_audio_after_text": round(l, 3), "alone": round(a, 3)}
            for s, l, a in zip(sentences, lags, alone)
        ],
        "first_audio_median": round(statistics.median(lags), 3),
        "alone_median": round(statistics.median(alone), 3),
    }


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "stt":
        base, key, wav_path, sessions, silence = sys.argv[2:7]
        print(json.dumps(asyncio.run(stt(base, key, wav_path, int(sessions), int(silence)))))
    else:
        base, key, voice = sys.argv[2:5]
        print(json.dumps(asyncio.run(tts(base, key, voice))))
