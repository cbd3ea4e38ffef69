"""Time to first audio of POST /v1/text-to-speech/stream: from sending the
request to receiving the first 1 KiB of audio. Usage: ttfb.py PORT KEY VOICE_ID
FORMAT RUNS"""
import http.client
import json
import statistics
import sys
import time

port, key, voice, fmt, runs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
text = "Hello there. The old lighthouse keeper climbed the stairs every evening. He lit the lamp and watched the ships pass in the dark."
firsts, totals = [], []
for _ in range(runs):
    c = http.client.HTTPConnection("127.0.0.1", int(port))
    t0 = time.perf_counter()
    c.request("POST", "/v1/text-to-speech/stream", json.dumps({"text": text, "voiceId": voice, "format": fmt}),
              {"Authorization": "Bearer " + key, "Content-Type": "application/json"})
    r = c.getresponse()
    assert r.status == 200, r.status
    got, first = b"", None
    while True:
        chunk = r.read1(65536)
        if not chunk:
            break
        got += chunk
        if first is None and len(got) >= 1024:
            first = time.perf_counter() - t0
    totals.append(time.perf_counter() - t0)
    firsts.append(first)
print(f"first_audio_ms_median={1000 * statistics.median(firsts):.0f} total_ms_median={1000 * statistics.median(totals):.0f} runs={runs}")
