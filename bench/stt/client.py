"""HTTP side of bench/stt.sh. Usage:
  client.py tts PORT KEY VOICE TEXT_FILE OUT_WAV        synthesize a text
  client.py stt PORT KEY AUDIO OUT_TEXT [model]         time one transcription
  client.py fair PORT KEY SHORT LONG RUNS [model]       a short request while a long one runs
Prints key=value lines."""
import http.client
import json
import statistics
import sys
import time
import uuid


def request(port, method, path, key, body=b"", ctype="application/json", headers=None):
    c = http.client.HTTPConnection("127.0.0.1", int(port), timeout=3600)
    h = {"Authorization": "Bearer " + key, "Content-Type": ctype}
    h.update(headers or {})
    c.request(method, path, body, h)
    r = c.getresponse()
    data = r.read()
    return r.status, data


def multipart(path, fields):
    boundary = uuid.uuid4().hex
    parts = []
    for k, v in fields.items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode())
    parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{path.split("/")[-1]}"\r\n'
                 f"Content-Type: application/octet-stream\r\n\r\n".encode() + open(path, "rb").read() + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


def transcribe(port, key, audio, model, respond_async=False):
    body, ctype = multipart(audio, {"language": "en", "model": model})
    headers = {"Prefer": "respond-async"} if respond_async else {}
    t0 = time.perf_counter()
    status, data = request(port, "POST", "/v1/speech-to-text", key, body, ctype, headers)
    elapsed = time.perf_counter() - t0
    job = json.loads(data)
    assert status in (200, 202), (status, job)
    return elapsed, job


def main():
    cmd, port, key = sys.argv[1], sys.argv[2], sys.argv[3]
    if cmd == "tts":
        voice, text_file, out = sys.argv[4], sys.argv[5], sys.argv[6]
        body = json.dumps({"text": open(text_file).read(), "voiceId": voice, "format": "wav"})
        status, data = request(port, "POST", "/v1/text-to-speech", key, body, headers={"Prefer": "wait=600"})
        job = json.loads(data)
        assert status == 200, (status, job)
        url = job["result"]["audioUrl"].split("127.0.0.1:" + port, 1)[1]
        c = http.client.HTTPConnection("127.0.0.1", int(port))
        c.request("GET", url)
        open(out, "wb").write(c.getresponse().read())
    elif cmd == "stt":
        audio, out = sys.argv[4], sys.argv[5]
        model = sys.argv[6] if len(sys.argv) > 6 else "base"
        elapsed, job = transcribe(port, key, audio, model)
        open(out, "w").write(job["result"]["text"])
        print(f"seconds={elapsed:.2f} audio={job['result']['duration']:.1f} rtf={elapsed / job['result']['duration']:.4f}")
    elif cmd == "fair":
        short, long_, runs = sys.argv[4], sys.argv[5], int(sys.argv[6])
        model = sys.argv[7] if len(sys.argv) > 7 else "base"
        solo = statistics.median(transcribe(port, key, short, model)[0] for _ in range(runs))
        _, job = transcribe(port, key, long_, model, respond_async=True)
        while True:
            _, data = request(port, "GET", f"/v1/jobs/{job['id']}", key)
            state = json.loads(data)
            if (state.get("progress") or 0) > 0:
                break
            time.sleep(0.2)
        during, _ = transcribe(port, key, short, model)
        _, data = request(port, "GET", f"/v1/jobs/{job['id']}", key)
        state = json.loads(data)
        print(f"solo_seconds={solo:.2f} during_long_seconds={during:.2f} ratio={during / solo:.2f} "
              f"long_status_after={state['status']} long_progress={state.get('progress')}")


main()
