"""Ours for bench/dubbing.sh: submits POST /v1/dubbing and polls the job
every 0.2 s until it ends, in this one process over one kept-alive
connection, so the waiting costs the 2-core machine next to nothing (a
shell loop starting curl and python3 on every poll took CPU from the job:
its synthesis ran about a quarter slower). Writes the finished job as
JSON to OUT and prints the seconds from submit to the end.
Usage: dub_ours.py PORT API_KEY FILE_ID OUT.json [EXTRA_FIELDS_JSON]"""
import http.client
import json
import sys
import time

port, key, file_id, out = sys.argv[1:5]
# More fields of the request, as a JSON object (bench/clone_dub.sh).
extra = json.loads(sys.argv[5]) if len(sys.argv) > 5 else {}
conn = http.client.HTTPConnection("127.0.0.1", int(port))
headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
body = json.dumps({"fileId": file_id, "targetLanguage": "es", "sourceLanguage": "en", **extra})
start = time.perf_counter()
conn.request("POST", "/v1/dubbing", body, headers)
job = json.loads(conn.getresponse().read())
while job.get("status") not in ("completed", "failed", "cancelled"):
    if "id" not in job:
        sys.exit(f"not submitted: {job}")
    time.sleep(0.2)
    conn.request("GET", f"/v1/jobs/{job['id']}", headers=headers)
    job = json.loads(conn.getresponse().read())
seconds = time.perf_counter() - start
with open(out, "w") as f:
    json.dump(job, f)
if job["status"] != "completed":
    sys.exit(f"the dub {job['status']}: {json.dumps(job.get('error'))}")
print(round(seconds, 2))
