"""WhisperLive (PyPI `whisper-live`), the live-transcription peer, on the same
recording and at the same pace as `bench/realtime.py stt`.

  serve PORT MODEL_DIR
      WhisperLive's server, its faster-whisper backend on MODEL_DIR (the
      CTranslate2 `base` folder ours reads; int8 on CPU, as it picks), one
      model shared by its clients (`single_model`).
  stt PORT WAV SESSIONS
      SESSIONS clients at once, each sending WAV (16-kHz mono) as float32 in
      100-ms frames at real-time pace, voice activity on, word times on,
      English given. Per session, as for ours: the median lag of a word's
      first appearance (in any segment sent) after its end (its completed
      segment's own word times), the median lag of each completed segment
      after its last word's end, and whether it kept up (its last completed
      segment within 3 s of the sound's end).

Prints one JSON object. Runs in the bench venv of bench/realtime.sh.
"""

import asyncio
import json
import statistics
import sys
import time
import uuid
import wave

import numpy as np
import websockets


def serve(port, model_dir):
    from whisper_live.server import TranscriptionServer

    TranscriptionServer().run(
        "127.0.0.1",
        port=port,
        backend="faster_whisper",
        faster_whisper_custom_model_path=model_dir,
        single_model=True,
        max_clients=8,
    )


async def session(port, audio):
    uid = str(uuid.uuid4())
    events = []
    async with websockets.connect(f"ws://127.0.0.1:{port}", max_size=None) as ws:
        await ws.send(json.dumps({
            "uid": uid, "language": "en", "task": "transcribe", "model": "base",
            "use_vad": True, "word_timestamps": True,
        }))
        while True:
            m = json.loads(await ws.recv())
            if m.get("message") == "SERVER_READY":
                break
        t0 = time.monotonic()

        async def send():
            frame = 1600  # 100 ms
            for k, i in enumerate(range(0, len(audio), frame)):
                await asyncio.sleep(max(0.0, t0 + (k + 1) * 0.1 - time.monotonic()))
                await ws.send(audio[i:i + frame].tobytes())
            # Its clients wait for the last segments before they stop.
            await asyncio.sleep(8)
            await ws.send(b"END_OF_AUDIO")

        sender = asyncio.create_task(send())
        try:
            while True:
                m = await asyncio.wait_for(ws.recv(), timeout=20)
                e = json.loads(m)
                if "segments" in e:
                    events.append({"at": time.monotonic() - t0, "segments": e["segments"]})
        except (websockets.ConnectionClosed, asyncio.TimeoutError):
            pass
        sender.cancel()
    return events


def figures(events, sound_end):
    # The completed segments, by start, as last sent.
    done = {}
    first_done = {}
    for e in events:
        for s in e["segments"]:
            if s.get("completed"):
                done[s["start"]] = s
                first_done.setdefault(s["start"], e["at"])
    completed = [done[k] for k in sorted(done, key=float)]
    words = [w for s in completed for w in s.get("words") or []]
    starts = [float(s["start"]) for s in completed]
    counts = [len(s["text"].split()) for s in completed]
    first = [None] * len(words)
    for e in events:
        if not e["segments"]:
            continue
        lead = float(e["segments"][0]["start"])
        # Words of completed segments no longer resent, then those sent.
        n = sum(c for st, c in zip(starts, counts) if st < lead - 1e-3)
        n += sum(len(s["text"].split()) for s in e["segments"])
        for i in range(min(n, len(words))):
            if first[i] is None:
                first[i] = e["at"]
    partial = [first[i] - float(w["end"]) for i, w in enumerate(words) if first[i] is not None]
    commit = [first_done[s["start"]] - float(s["words"][-1]["end"]) for s in completed if s.get("words")]
    last = max(first_done.values()) if first_done else float("inf")
    return {
        "words": len(words),
        "turns": len(completed),
        "partial_lag_median": round(statistics.median(partial), 3) if partial else None,
        "commit_lag_median": round(statistics.median(commit), 3) if commit else None,
        "commit_lags": [round(x, 3) for x in commit],
        "last_commit_after_sound": round(last - sound_end, 3),
        "kept_up": last - sound_end < 3.0,
        "text": " ".join(s["text"].strip() for s in completed),
    }


async def stt(port, wav_path, sessions):
    with wave.open(wav_path) as w:
        assert w.getframerate() == 16000 and w.getnchannels() == 1 and w.getsampwidth() == 2
        audio = np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16).astype(np.float32) / 32768.0
    sound_end = len(audio) / 16000
    runs = await asyncio.gather(*(session(port, audio) for _ in range(sessions)))
    return {"sessions": [figures(e, sound_end) for e in runs], "seconds": sound_end}


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(int(sys.argv[2]), sys.argv[3])
    else:
        port, wav_path, sessions = sys.argv[2:5]
        print(json.dumps(asyncio.run(stt(int(port), wav_path, int(sessions)))))
