// Mediagen console: a page per section (the URL's hash), all through the
// public API with the signed-in key. The key lives in this tab's session
// storage and is sent only to this origin. Text from the API is always set
// as text (never parsed as HTML).

const KEY = "mediagen.key";
const $ = (id) => document.getElementById(id);
const pages = ["voices", "speech", "transcribe", "dub", "trim", "create", "avatars", "jobs", "account", "operator"];
let operator = false;
let account = null;
let voicePage = 1;
let chosen = null;
let jobTimer = null;

class ApiFailure extends Error {
  constructor(status, body) {
    super(body?.error?.message || `HTTP ${status}`);
    this.status = status;
    this.code = body?.error?.code;
    this.details = body?.error?.details || {};
  }
}

// The signed-in key as a request header.
const authorization = () => ({ Authorization: `Bearer ${sessionStorage.getItem(KEY)}` });

// A call to the API with the signed-in key: `body` goes as JSON, `form`
// (FormData, for uploads) as multipart.
async function api(path, { method = "GET", body, form, headers = {} } = {}) {
  const init = { method, headers: { ...authorization(), ...headers } };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  if (form !== undefined) init.body = form;
  const res = await fetch(path, init);
  const text = await res.text();
  const data = text ? JSON.parse(text) : null;
  if (!res.ok) throw new ApiFailure(res.status, data);
  return data;
}

function say(message, error = false) {
  const s = $("status");
  s.textContent = message;
  s.classList.toggle("error", error);
}

function cell(row, text, label) {
  const td = row.insertCell();
  if (text instanceof Node) td.append(text);
  else td.textContent = text ?? "";
  if (label) td.dataset.label = label;
  return td;
}

function button(text, onClick, quiet = true) {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = text;
  if (quiet) b.className = "quiet";
  b.addEventListener("click", onClick);
  return b;
}

const when = (iso) => (iso ? new Date(iso).toLocaleString() : "");
// Numbers for people: thousands separated; "1 credit", "2 credits".
const num = (n) => Number(n).toLocaleString("en-US");
const creditsOf = (n) => `${num(n)} credit${Number(n) === 1 ? "" : "s"}`;
const atLeast = (level) => {
  const order = ["read", "write", "admin", "operator"];
  return account && order.indexOf(account.key.level) >= order.indexOf(level);
};

// Waits for a job the API answered with 202 (or still running); `each`
// sees it after every poll.
async function finished(job, each = () => {}) {
  while (job.status === "queued" || job.status === "processing") {
    each(job);
    await new Promise((r) => setTimeout(r, 500));
    job = await api(`/v1/jobs/${encodeURIComponent(job.id)}`);
  }
  if (job.status !== "completed") throw new Error(job.error?.message || `The job ${job.status}.`);
  return job;
}

// A form's submit: its button is disabled and `busy` shown while `work`
// runs; an error is shown as one.
function onSubmit(id, busy, work) {
  $(id).addEventListener("submit", async (e) => {
    e.preventDefault();
    const submit = $(id).querySelector("button[type=submit]");
    submit.disabled = true;
    if (busy) say(busy);
    try {
      await work();
    } catch (err) {
      say(err.message, true);
    } finally {
      submit.disabled = false;
    }
  });
}

// A button that records from the microphone: pressed to start, again to
// stop; `done` gets the recording (a File) and its length in seconds.
function recordButton(id, done, started = () => {}) {
  const b = $(id);
  const idle = b.textContent;
  let recorder = null;
  b.addEventListener("click", async () => {
    if (recorder) { recorder.stop(); return; }
    try {
      const stream = await navigator.mediaDevices.getUserMedia({ audio: true });
      const chunks = [];
      const since = Date.now();
      recorder = new MediaRecorder(stream);
      recorder.ondataavailable = (e) => chunks.push(e.data);
      recorder.onstop = () => {
        stream.getTracks().forEach((t) => t.stop());
        const type = recorder.mimeType || "audio/webm";
        recorder = null;
        b.textContent = idle;
        b.setAttribute("aria-pressed", "false");
        done(new File(chunks, "recording.webm", { type }), (Date.now() - since) / 1000);
      };
      recorder.start();
      b.textContent = "Stop recording";
      b.setAttribute("aria-pressed", "true");
      started();
    } catch (err) {
      say(`The microphone could not be used: ${err.message}`, true);
    }
  });
}

// Seconds as m:ss.s (or h:mm:ss.s).
function clock(t) {
  const h = Math.floor(t / 3600), m = Math.floor((t % 3600) / 60), sec = (t % 60).toFixed(1).padStart(4, "0");
  return h ? `${h}:${String(m).padStart(2, "0")}:${sec}` : `${m}:${sec}`;
}

// A link that saves `text` as a file named `name`.
function download(name, text, type) {
  const a = document.createElement("a");
  a.href = URL.createObjectURL(new Blob([text], { type }));
  a.download = name;
  a.textContent = `Download ${name}`;
  return a;
}

// ---- sign-in ---------------------------------------------------------------

// Whether the key is an operator's (its account manages the others).
async function probeOperator() {
  operator = atLeast("admin") && await api("/v1/accounts?limit=1").then(() => true, () => false);
}

async function signIn(key) {
  sessionStorage.setItem(KEY, key);
  try {
    account = await api("/v1/account");
    await probeOperator();
  } catch (e) {
    sessionStorage.removeItem(KEY);
    account = null;
    throw e;
  }
}

function signOut() {
  sessionStorage.removeItem(KEY);
  account = null;
  operator = false;
  location.hash = "";
  route();
}

$("sign-in-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  try {
    await signIn($("key").value.trim());
    $("key").value = "";
    say("");
    if (!pages.includes(location.hash.slice(1))) location.hash = "#voices";
    route();
  } catch (err) {
    say(err.status === 401 ? "That key was not accepted." : `Sign-in failed: ${err.message}`, true);
  }
});
$("sign-out").addEventListener("click", signOut);

// ---- voices ----------------------------------------------------------------

async function loadVoices() {
  const form = new FormData($("voice-filter"));
  const q = new URLSearchParams({ page: voicePage, limit: 20 });
  for (const [k, v] of form) if (v) q.set(k, v);
  const page = await api(`/v1/voices?${q}`);
  const body = $("voice-table").tBodies[0];
  body.replaceChildren();
  for (const v of page.data) {
    const row = body.insertRow();
    cell(row, v.name, "Name");
    cell(row, v.language, "Language");
    cell(row, v.gender, "Gender");
    cell(row, v.engine, "Engine");
    const audio = document.createElement("audio");
    audio.controls = true;
    audio.preload = "none";
    audio.src = v.previewUrl;
    audio.setAttribute("aria-label", `Preview of ${v.name}`);
    cell(row, audio, "Preview");
    cell(row, button(`Use ${v.name}`, () => {
      chosen = v;
      location.hash = "#speech";
    }));
  }
  const p = page.pagination;
  $("voice-count").textContent = `${p.total} voice${p.total === 1 ? "" : "s"} (page ${p.page})`;
  $("voices-prev").disabled = p.page <= 1;
  $("voices-next").disabled = !p.hasMore;
}

$("voice-filter").addEventListener("submit", (e) => {
  e.preventDefault();
  voicePage = 1;
  loadVoices().catch((err) => say(err.message, true));
});
$("voices-prev").addEventListener("click", () => { voicePage--; loadVoices().catch((err) => say(err.message, true)); });
$("voices-next").addEventListener("click", () => { voicePage++; loadVoices().catch((err) => say(err.message, true)); });

// The two pickers of the comparison, on two different voices.
async function fillComparePickers() {
  await Promise.all(["compare-a", "compare-b"].map((id) => fillVoices($(id))));
  const [a, b] = [$("compare-a"), $("compare-b")];
  if (b.options.length > 1 && a.value === b.value) b.selectedIndex = a.selectedIndex === 0 ? 1 : 0;
}

// Two voices saying the same sentence, side by side.
onSubmit("compare-form", "Speaking the sentence in both voices…", async () => {
  const ids = [$("compare-a").value, $("compare-b").value];
  const jobs = await Promise.all(ids.map(async (voiceId) =>
    finished(await api("/v1/text-to-speech", { method: "POST", body: { text: $("compare-text").value, voiceId, format: "mp3" } }))));
  const out = $("compare-result");
  out.replaceChildren();
  jobs.forEach((job, i) => {
    const select = $(i ? "compare-b" : "compare-a");
    const figure = document.createElement("figure");
    const caption = document.createElement("figcaption");
    caption.textContent = select.options[select.selectedIndex].textContent;
    const audio = document.createElement("audio");
    audio.controls = true;
    audio.src = job.result.audioUrl;
    audio.setAttribute("aria-label", `The sentence in ${caption.textContent}`);
    const meta = document.createElement("p");
    meta.textContent = `${job.result.duration.toFixed(2)} s`;
    figure.append(caption, audio, meta);
    out.append(figure);
  });
  out.hidden = false;
  say("");
});

// Cloning: samples chosen or recorded, consent given, then the voice with
// its measured likeness to the samples.
let cloneRecordings = [];

function describeSamples() {
  const files = [...$("clone-files").files, ...cloneRecordings];
  $("clone-samples").textContent = files.length ? `Samples: ${files.map((f) => f.name).join(", ")}` : "";
}
$("clone-files").addEventListener("change", describeSamples);

recordButton("clone-record", (file) => {
  cloneRecordings.push(new File([file], `recording-${cloneRecordings.length + 1}.webm`, { type: file.type }));
  describeSamples();
});

onSubmit("clone-form", "Cloning the voice…", async () => {
  const files = [...$("clone-files").files, ...cloneRecordings];
  if (!files.length) { say("Add at least one sample.", true); return; }
  const form = new FormData();
  form.append("name", $("clone-name").value);
  form.append("consent", $("clone-consent").checked ? "true" : "false");
  const language = $("clone-language").value.trim();
  if (language) form.append("language", language);
  const quality = $("clone-quality").value;
  if (quality === "world") form.append("method", "world");
  else form.append("quality", quality);
  for (const f of files) form.append("files", f, f.name);
  let voice = await api("/v1/voices", { method: "POST", form });
  if (voice.status) voice = await api(`/v1/voices/${encodeURIComponent((await finished(voice)).result.voiceId)}`);
  const sim = voice.similarity?.samples;
  const held = voice.similarity?.heldOut;
  const base = (voiceList || []).find((v) => v.id === voice.baseVoiceId);
  $("clone-meta").textContent = held
    ? `${voice.name}: ${voice.language}, a neural voice of its own; likeness to samples it was not made from ${held.clone.toFixed(2)}, the nearest stock voice ${held.bestStock.toFixed(2)} (docs/voice.md explains the scale)`
    : `${voice.name}: ${voice.language}, spoken by ${base ? voiceLabel(base) : voice.baseVoiceId} converted toward the samples`
      + (typeof sim === "number" ? `; likeness to the samples ${sim.toFixed(2)} (docs/voice.md explains the scale)` : "");
  if (voice.previewUrl) $("clone-audio").src = voice.previewUrl;
  $("clone-result").hidden = false;
  voiceList = null;
  for (const id of ["tts-voice", "compare-a", "compare-b"]) $(id).replaceChildren();
  cloneRecordings = [];
  say(`Cloned ${voice.name}.`);
  // The list shows the account's cloned voices, the new one among them.
  $("voice-filter").reset();
  $("vf-category").value = "cloned";
  voicePage = 1;
  await loadVoices();
  await fillComparePickers();
});

// ---- text to speech --------------------------------------------------------

const voiceLabel = (v) => `${v.name} (${v.language}, ${v.engine})`;
let voiceList = null;

// Fills a voice picker with the first hundred voices (the account's cloned
// voices first).
async function fillVoices(select) {
  if (select.options.length) return;
  if (!voiceList) {
    const [cloned, all] = await Promise.all([api("/v1/voices?category=cloned&limit=100"), api("/v1/voices?limit=100")]);
    const seen = new Set(cloned.data.map((v) => v.id));
    voiceList = [...cloned.data, ...all.data.filter((v) => !seen.has(v.id))];
  }
  for (const v of voiceList) select.add(new Option(voiceLabel(v), v.id));
}

// The voice picker, with the voice last chosen on the voices page selected.
async function loadVoiceChoices() {
  const select = $("tts-voice");
  await fillVoices(select);
  if (chosen) {
    if (![...select.options].some((o) => o.value === chosen.id)) select.add(new Option(voiceLabel(chosen), chosen.id));
    select.value = chosen.id;
    chosen = null;
    estimate();
  }
}

function ttsBody(dryRun) {
  return {
    text: $("tts-text").value,
    voiceId: $("tts-voice").value,
    format: $("tts-format").value,
    speed: Number($("tts-speed").value) || 1,
    timestamps: $("tts-words").checked,
    ...(dryRun ? { dryRun: true } : {}),
  };
}

let estimateTimer = null;
function estimate() {
  const n = [...$("tts-text").value].length;
  $("tts-count").textContent = `${n} character${n === 1 ? "" : "s"}`;
  clearTimeout(estimateTimer);
  if (!n || !$("tts-voice").value) { $("tts-estimate").textContent = ""; return; }
  estimateTimer = setTimeout(async () => {
    try {
      const price = await api("/v1/text-to-speech", { method: "POST", body: ttsBody(true) });
      $("tts-estimate").textContent = `Costs ${creditsOf(price.estimatedCredits)} (you have ${num(price.availableCredits)}).`;
    } catch (err) {
      $("tts-estimate").textContent = err.message;
    }
  }, 300);
}
$("tts-text").addEventListener("input", estimate);
$("tts-voice").addEventListener("change", estimate);

function showWords(words) {
  const out = $("tts-words-out");
  out.replaceChildren();
  for (const w of words || []) {
    const span = document.createElement("span");
    span.textContent = w.word;
    span.dataset.start = w.start;
    span.dataset.end = w.end;
    out.append(span, " ");
  }
}

$("tts-audio").addEventListener("timeupdate", () => {
  const t = $("tts-audio").currentTime;
  for (const span of $("tts-words-out").children) {
    span.classList.toggle("now", t >= Number(span.dataset.start) && t < Number(span.dataset.end));
  }
});

// Streams the speech into the player through Media Source Extensions: it
// starts playing when the first sentence arrives. Reports when the first
// audio and the last arrived.
async function streamSpeech() {
  const audio = $("tts-audio");
  const source = new MediaSource();
  audio.src = URL.createObjectURL(source);
  await new Promise((r) => source.addEventListener("sourceopen", r, { once: true }));
  const buffer = source.addSourceBuffer("audio/mpeg");
  const appended = () => new Promise((r) => buffer.addEventListener("updateend", r, { once: true }));
  const started = performance.now();
  const res = await fetch("/v1/text-to-speech/stream", {
    method: "POST",
    headers: { ...authorization(), "Content-Type": "application/json" },
    body: JSON.stringify({ ...ttsBody(false), format: "mp3", timestamps: false }),
  });
  if (!res.ok) throw new ApiFailure(res.status, await res.json().catch(() => null));
  $("tts-result").hidden = false;
  showWords([]);
  const reader = res.body.getReader();
  let first = null;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (first === null) {
      first = (performance.now() - started) / 1000;
      $("tts-meta").textContent = `First audio after ${first.toFixed(2)} s…`;
    }
    buffer.appendBuffer(value);
    await appended();
    if (audio.paused && audio.currentTime === 0) audio.play().catch(() => {});
  }
  source.endOfStream();
  const all = (performance.now() - started) / 1000;
  $("tts-meta").textContent = `Streamed: first audio after ${first.toFixed(2)} s, all of it after ${all.toFixed(2)} s (job ${res.headers.get("X-Job-Id")})`;
}

onSubmit("tts-form", "Speaking…", async () => {
  if ($("tts-stream").checked) {
    await streamSpeech();
    say("Done.");
    return;
  }
  const job = await finished(await api("/v1/text-to-speech", { method: "POST", body: ttsBody(false) }));
  const r = job.result;
  $("tts-audio").src = r.audioUrl;
  $("tts-meta").textContent = `${r.duration.toFixed(2)} s, ${r.format} at ${r.sampleRate} Hz, ${creditsOf(job.credits)}`;
  showWords(r.words);
  $("tts-result").hidden = false;
  say("Done.");
});

// ---- speech to text --------------------------------------------------------

let sttInput = null;

$("stt-file").addEventListener("change", () => {
  sttInput = $("stt-file").files[0] || null;
  $("stt-source").textContent = sttInput ? `File: ${sttInput.name}` : "";
});

recordButton("stt-record", (file, seconds) => {
  sttInput = file;
  $("stt-source").textContent = `Recording: ${seconds.toFixed(1)} s`;
}, () => { $("stt-source").textContent = "Recording…"; });

function subtitles(segments, vtt) {
  const time = (t) => {
    const ms = Math.round(t * 1000);
    const hh = String(Math.floor(ms / 3600000)).padStart(2, "0");
    const mm = String(Math.floor(ms / 60000) % 60).padStart(2, "0");
    const ss = String(Math.floor(ms / 1000) % 60).padStart(2, "0");
    return `${hh}:${mm}:${ss}${vtt ? "." : ","}${String(ms % 1000).padStart(3, "0")}`;
  };
  const cues = segments.map((s, i) => {
    const who = s.speaker ? (vtt ? `<v ${s.speaker}>` : `[${s.speaker}] `) : "";
    return `${vtt ? "" : `${i + 1}\n`}${time(s.start)} --> ${time(s.end)}\n${who}${s.text.trim()}\n`;
  });
  return (vtt ? "WEBVTT\n\n" : "") + cues.join("\n");
}

onSubmit("stt-form", "Transcribing…", async () => {
  if (!sttInput) { say("Choose a file or record first.", true); return; }
  const form = new FormData();
  form.append("file", sttInput, sttInput.name);
  form.append("responseFormat", "verbose_json");
  const language = $("stt-language").value.trim();
  if (language) form.append("language", language);
  if ($("stt-diarize").checked) form.append("diarize", "true");
  const job = await finished(await api("/v1/speech-to-text", { method: "POST", form }));
  const r = job.result;
  $("stt-audio").src = URL.createObjectURL(sttInput);
  $("stt-meta").textContent = `${r.duration.toFixed(1)} s, language ${r.language}, ${creditsOf(job.credits)}`
    + (r.speakers ? `, ${r.speakers.length} speaker${r.speakers.length === 1 ? "" : "s"}` : "");
  const list = $("stt-segments");
  list.replaceChildren();
  for (const seg of r.segments) {
    const li = document.createElement("li");
    const b = document.createElement("button");
    b.type = "button";
    b.dataset.start = seg.start;
    b.dataset.end = seg.end;
    const time = document.createElement("span");
    time.className = "time";
    time.textContent = clock(seg.start);
    b.append(time, " ");
    if (seg.speaker) {
      const who = document.createElement("span");
      who.className = "speaker";
      who.textContent = seg.speaker;
      b.append(who, " ");
    }
    b.append(seg.text.trim());
    b.addEventListener("click", () => {
      $("stt-audio").currentTime = seg.start;
      $("stt-audio").play().catch(() => {}); // a pause before it starts is no error
    });
    li.append(b);
    list.append(li);
  }
  const base = (sttInput.name || "transcript").replace(/\.[^.]*$/, "");
  $("stt-downloads").replaceChildren(
    download(`${base}.srt`, subtitles(r.segments, false), "application/x-subrip"),
    download(`${base}.vtt`, subtitles(r.segments, true), "text/vtt"),
    download(`${base}.txt`, `${r.text.trim()}\n`, "text/plain"),
  );
  $("stt-result").hidden = false;
  say("Done.");
});

$("stt-audio").addEventListener("timeupdate", () => {
  const t = $("stt-audio").currentTime;
  for (const b of $("stt-segments").querySelectorAll("button")) {
    b.classList.toggle("now", t >= Number(b.dataset.start) && t < Number(b.dataset.end));
  }
});

// ---- dubbing ---------------------------------------------------------------

let dubJob = null;

async function loadDubTargets() {
  const select = $("dub-target");
  if (select.options.length) return;
  const { targets } = await api("/v1/dubbing/languages");
  for (const t of targets) select.add(new Option(t, t));
  if (targets.includes("es")) select.value = "es";
}

const stage = (p) => (p < 30 ? "Transcribing" : p < 40 ? "Translating" : p < 85 ? "Speaking the lines" : p < 90 ? "Mixing" : "Muxing and writing subtitles");

function showDubProgress(job) {
  $("dub-progress").hidden = false;
  $("dub-bar").value = job.progress;
  $("dub-stage").textContent = `${stage(job.progress)} (${job.progress} %)`;
}

function showDub(job) {
  dubJob = job;
  const r = job.result;
  $("dub-dubbed").src = r.videoUrl || r.audioUrl;
  $("dub-meta").textContent = `${r.sourceLanguage} → ${r.targetLanguage}, ${r.duration.toFixed(1)} s, ${creditsOf(job.credits)}`
    + (r.speakers ? `, ${r.speakers.length} speakers` : "");
  const body = $("dub-lines").tBodies[0];
  body.replaceChildren();
  r.segments.forEach((line, i) => {
    const row = body.insertRow();
    cell(row, String(i + 1), "#");
    cell(row, `${clock(line.start)}–${clock(line.end)}`, "Time");
    cell(row, line.sourceText, "Original");
    const text = document.createElement("textarea");
    text.rows = 2;
    text.value = line.translatedText;
    text.setAttribute("aria-label", `Translation of line ${i + 1}`);
    cell(row, text, "Translation");
    cell(row, button(`Re-dub line ${i + 1}`, async (ev) => {
      ev.target.disabled = true;
      say(`Re-dubbing line ${i + 1}…`);
      try {
        const edit = await api(`/v1/dubbing/${encodeURIComponent(dubJob.id)}/segments`,
          { method: "POST", body: { segments: [{ index: i, translatedText: text.value }] } });
        showDub(await finished(edit, showDubProgress));
        $("dub-progress").hidden = true;
        say(`Line ${i + 1} re-dubbed.`);
      } catch (err) {
        say(err.message, true);
        ev.target.disabled = false;
      }
    }));
  });
  $("dub-result").hidden = false;
}

onSubmit("dub-form", "Uploading…", async () => {
  const file = $("dub-file").files[0];
  $("dub-result").hidden = true;
  const form = new FormData();
  form.append("file", file, file.name);
  const uploaded = await api("/v1/files", { method: "POST", form });
  say("Dubbing…");
  const job = await api("/v1/dubbing", { method: "POST", body: { fileId: uploaded.id, targetLanguage: $("dub-target").value } });
  const done = await finished(job, showDubProgress);
  $("dub-progress").hidden = true;
  $("dub-original").src = URL.createObjectURL(file);
  showDub(done);
  say("Done.");
});

// ---- video trimming --------------------------------------------------------

let trimRanges = [];

function drawTimeline(pending) {
  const video = $("trim-video");
  const line = $("trim-timeline");
  const d = video.duration || 1;
  line.replaceChildren();
  for (const r of pending ? [...trimRanges, pending] : trimRanges) {
    const div = document.createElement("div");
    div.className = "range";
    div.style.left = `${(r.start / d) * 100}%`;
    div.style.width = `${((r.end - r.start) / d) * 100}%`;
    line.append(div);
  }
  const head = document.createElement("div");
  head.className = "head";
  head.style.left = `${(video.currentTime / d) * 100}%`;
  line.append(head);
}

function drawRanges() {
  const list = $("trim-ranges");
  list.replaceChildren();
  trimRanges.forEach((r, i) => {
    const li = document.createElement("li");
    li.append(`${clock(r.start)} – ${clock(r.end)} `);
    li.append(button(`Remove range ${i + 1}`, () => { trimRanges.splice(i, 1); drawRanges(); }));
    list.append(li);
  });
  drawTimeline();
}

$("trim-file").addEventListener("change", () => {
  const file = $("trim-file").files[0];
  trimRanges = [];
  $("trim-result").hidden = true;
  if (!file) return;
  $("trim-video").src = URL.createObjectURL(file);
});
$("trim-video").addEventListener("loadedmetadata", () => { $("trim-editor").hidden = false; drawRanges(); });
$("trim-video").addEventListener("timeupdate", () => drawTimeline());

// Dragging across the timeline marks a range (the video shows the frame
// under the pointer).
let dragFrom = null;
const timeAt = (ev) => {
  const box = $("trim-timeline").getBoundingClientRect();
  const f = Math.min(1, Math.max(0, (ev.clientX - box.left) / box.width));
  return Math.round(f * ($("trim-video").duration || 0) * 100) / 100;
};
$("trim-timeline").addEventListener("pointerdown", (ev) => {
  dragFrom = timeAt(ev);
  $("trim-timeline").setPointerCapture(ev.pointerId);
});
$("trim-timeline").addEventListener("pointermove", (ev) => {
  if (dragFrom === null) return;
  const t = timeAt(ev);
  $("trim-video").currentTime = t;
  drawTimeline({ start: Math.min(dragFrom, t), end: Math.max(dragFrom, t) });
});
$("trim-timeline").addEventListener("pointerup", (ev) => {
  if (dragFrom === null) return;
  const t = timeAt(ev);
  $("trim-start").value = Math.min(dragFrom, t);
  $("trim-end").value = Math.max(dragFrom, t);
  dragFrom = null;
  drawTimeline();
});
$("trim-mark-start").addEventListener("click", () => { $("trim-start").value = $("trim-video").currentTime.toFixed(2); });
$("trim-mark-end").addEventListener("click", () => { $("trim-end").value = $("trim-video").currentTime.toFixed(2); });
$("trim-add").addEventListener("click", () => {
  const start = Number($("trim-start").value), end = Number($("trim-end").value);
  const d = $("trim-video").duration;
  if (!(end > start) || start < 0 || end > d + 0.01) {
    say(`A range needs 0 ≤ start < end ≤ ${d.toFixed(2)} s.`, true);
    return;
  }
  say("");
  trimRanges.push({ start, end });
  $("trim-start").value = "";
  $("trim-end").value = "";
  drawRanges();
});

onSubmit("trim-form", "Trimming…", async () => {
  if (!trimRanges.length) { say("Add at least one range.", true); return; }
  const file = $("trim-file").files[0];
  const form = new FormData();
  form.append("file", file, file.name);
  form.append("ranges", JSON.stringify(trimRanges));
  const job = await finished(await api("/v1/video/trim", { method: "POST", form }));
  const r = job.result;
  $("trim-output").src = r.videoUrl;
  $("trim-meta").textContent = `${r.duration.toFixed(2)} s from ${r.ranges.length} range${r.ranges.length === 1 ? "" : "s"}, ${r.width}×${r.height}, ${creditsOf(job.credits)}`;
  $("trim-result").hidden = false;
  say("Done.");
});

// ---- sound and image generation --------------------------------------------

// A card in the gallery for a finished job: its media, prompt and seed.
function addToGallery(kind, prompt, job) {
  const r = job.result;
  const li = document.createElement("li");
  const items = kind === "image" ? r.images : [r];
  for (const item of items) {
    if (kind === "image") {
      const img = document.createElement("img");
      img.src = item.imageUrl;
      img.width = item.width;
      img.height = item.height;
      img.alt = `Generated for “${prompt}” (seed ${item.seed})`;
      li.append(img);
    } else {
      const audio = document.createElement("audio");
      audio.controls = true;
      audio.src = item.audioUrl;
      audio.setAttribute("aria-label", `Sound for “${prompt}” (seed ${item.seed})`);
      li.append(audio);
    }
  }
  const p = document.createElement("p");
  p.textContent = `${prompt}`;
  const meta = document.createElement("p");
  meta.className = "meta";
  meta.textContent = kind === "image"
    ? `${items.length} image${items.length === 1 ? "" : "s"}, seeds ${items.map((i) => i.seed).join(", ")}, ${creditsOf(job.credits)}`
    : `${r.duration.toFixed(1)} s, seed ${r.seed}${r.loop ? ", loops" : ""}, ${creditsOf(job.credits)}`;
  li.append(p, meta);
  // What the image engine could not honour: relations and unused words.
  if (kind === "image" && r.images[0].relations) {
    const notes = r.images[0].relations.filter((x) => !x.met)
      .map((x) => `${x.subject} ${x.relation} ${x.objects.join(" and ")}: ${x.reason}`);
    if (r.ignoredTerms && r.ignoredTerms.length) notes.push(`words not used: ${r.ignoredTerms.join(", ")}`);
    if (notes.length) {
      const unmet = document.createElement("p");
      unmet.className = "meta unmet";
      unmet.textContent = `Not as asked: ${notes.join("; ")}`;
      li.append(unmet);
    }
  }
  $("gallery").prepend(li);
}

// A refused prompt: the message, and the words the generator knows.
async function showRefused(kind, err) {
  $("refused-why").textContent = err.message;
  let words = err.details.understood;
  if (!Array.isArray(words) && kind === "sound") {
    const v = await api("/v1/sound-generation/vocabulary");
    words = v.concepts.map((c) => c.name);
  }
  const list = $("refused-words");
  list.replaceChildren();
  for (const w of (Array.isArray(words) ? words : []).slice(0, 300)) {
    const li = document.createElement("li");
    li.textContent = typeof w === "string" ? w : w.name || JSON.stringify(w);
    list.append(li);
  }
  $("refused").hidden = false;
  $("refused").scrollIntoView();
}

// Generates a sound or an image into the gallery; a prompt the generator
// cannot make shows what it understands.
async function generate(kind, path, body, prompt) {
  $("refused").hidden = true;
  try {
    addToGallery(kind, prompt, await finished(await api(path, { method: "POST", body })));
    say("Done.");
  } catch (err) {
    if (err.code === "unsupported_prompt") await showRefused(kind, err);
    throw err;
  }
}

const optional = (id) => ($(id).value === "" ? undefined : Number($(id).value));

onSubmit("sound-form", "Generating the sound…", () => {
  const prompt = $("sound-prompt").value.trim();
  return generate("sound", "/v1/sound-generation",
    { prompt, duration: optional("sound-duration"), seed: optional("sound-seed"), loop: $("sound-loop").checked }, prompt);
});

onSubmit("image-form", "Generating the image…", () => {
  const prompt = $("image-prompt").value.trim();
  const size = Number($("image-size").value);
  return generate("image", "/v1/image-generation",
    { prompt, width: size, height: size, n: optional("image-n"), seed: optional("image-seed"), style: $("image-style").value || undefined }, prompt);
});

// ---- avatars ---------------------------------------------------------------

async function loadAvatars() {
  const page = await api("/v1/avatars?limit=100");
  const gallery = $("avatar-gallery");
  gallery.replaceChildren();
  const select = $("expand-avatar");
  const chosen = select.value;
  select.replaceChildren();
  for (const a of page.data) {
    const li = document.createElement("li");
    const video = document.createElement("video");
    video.controls = true;
    video.preload = "none";
    video.poster = a.posterUrl;
    video.src = a.previewVideoUrl;
    video.setAttribute("aria-label", `Preview of ${a.name}`);
    const name = document.createElement("p");
    name.textContent = a.name;
    const meta = document.createElement("p");
    meta.className = "meta";
    meta.textContent = `${a.style}, ${a.orientation}, ${a.width}×${a.height}, ${a.duration.toFixed(1)} s`;
    li.append(video, name, meta);
    gallery.append(li);
    select.add(new Option(a.name, a.id));
  }
  if (chosen) select.value = chosen;
}

onSubmit("avatar-form", "Uploading the avatar…", async () => {
  const form = new FormData();
  const file = $("avatar-file").files[0];
  form.append("file", file, file.name);
  form.append("name", $("avatar-name").value);
  form.append("gender", $("avatar-gender").value);
  let avatar = await api("/v1/avatars", { method: "POST", form });
  if (avatar.status) avatar = await api(`/v1/avatars/${encodeURIComponent((await finished(avatar)).result.avatarId)}`);
  say(`Added ${avatar.name}.`);
  $("avatar-form").reset();
  await loadAvatars();
});

// What the seam report's numbers mean, for people.
function seamReport(r) {
  const rows = [
    ["Length", `${r.duration.toFixed(2)} s (${r.frames} frames at ${r.fps} fps)`],
    ["Mode", r.mode],
    ["Jumps", `${r.jumps ?? 0} (places where the clip jumps back to a matching frame)`],
    ["Seam score", `${(r.seamScore ?? 0).toFixed(2)} (the worst jolt at a seam, in units of the clip's usual frame-to-frame change; 0 means no seam, lower is smoother)`],
  ];
  $("expand-report").replaceChildren();
  for (const [k, v] of rows) {
    const dt = document.createElement("dt");
    dt.textContent = k;
    const dd = document.createElement("dd");
    dd.textContent = v;
    $("expand-report").append(dt, dd);
  }
}

onSubmit("expand-form", "Expanding…", async () => {
  const body = { avatarId: $("expand-avatar").value, duration: Number($("expand-seconds").value), mode: $("expand-mode").value };
  const job = await finished(await api("/v1/avatar-expansion", { method: "POST", body }));
  $("expand-video").src = job.result.videoUrl;
  seamReport(job.result);
  $("expand-result").hidden = false;
  say("Done.");
});

// ---- jobs ------------------------------------------------------------------

// A finished job's output, playable where it stands: its sound, video or
// first picture, and a link to the file.
function resultPlayer(j) {
  const r = j.result || {};
  const url = r.videoUrl || r.audioUrl || r.imageUrl;
  if (!url) return [];
  let media;
  if (r.imageUrl && !r.videoUrl && !r.audioUrl) {
    media = document.createElement("img");
    media.alt = `Result of ${j.id}`;
    media.className = "thumb";
  } else {
    media = document.createElement(r.videoUrl ? "video" : "audio");
    media.controls = true;
    media.preload = "none";
    media.setAttribute("aria-label", `Result of ${j.id}`);
  }
  media.src = url;
  const a = document.createElement("a");
  a.href = url;
  a.textContent = "Open";
  a.setAttribute("aria-label", `Open the result of ${j.id}`);
  return [media, " ", a];
}

// The list, refreshed in place: a row is rebuilt only when its job
// changed, so a result being played keeps playing.
const jobRows = new Map();

function jobRow(j) {
  const row = document.createElement("tr");
  row.dataset.state = `${j.status}/${j.progress}/${j.credits}`;
  cell(row, j.id, "Job");
  cell(row, j.kind, "Kind");
  cell(row, j.status, "Status").className = `status-${j.status}`;
  const bar = document.createElement("progress");
  bar.max = 100;
  bar.value = j.progress;
  bar.setAttribute("aria-label", `Progress of ${j.id}`);
  cell(row, bar, "Progress");
  cell(row, String(j.credits), "Credits");
  cell(row, when(j.createdAt), "Created");
  const actions = cell(row, "");
  if ((j.status === "queued" || j.status === "processing") && atLeast("write")) {
    actions.append(button(`Cancel ${j.id}`, async () => {
      try { await api(`/v1/jobs/${encodeURIComponent(j.id)}`, { method: "DELETE" }); await loadJobs(); }
      catch (err) { say(err.message, true); }
    }));
  }
  actions.append(...resultPlayer(j));
  return row;
}

async function loadJobs() {
  const page = await api("/v1/jobs?limit=20");
  const body = $("job-table").tBodies[0];
  const rows = page.data.map((j) => {
    const old = jobRows.get(j.id);
    if (old && old.dataset.state === `${j.status}/${j.progress}/${j.credits}`) return old;
    const row = jobRow(j);
    if (old && old.isConnected) old.replaceWith(row);
    jobRows.set(j.id, row);
    return row;
  });
  // Rows already in place are not moved (moving a player would pause it).
  rows.forEach((row, i) => {
    if (body.rows[i] !== row) body.insertBefore(row, body.rows[i] || null);
  });
  while (body.rows.length > rows.length) body.deleteRow(-1);
}

// ---- account ---------------------------------------------------------------

async function loadAccount() {
  account = await api("/v1/account");
  const c = account.credits;
  $("credits").replaceChildren();
  for (const [k, v] of [["Balance", c.balance], ["Reserved", c.reserved], ["Used", c.used], ["This key", account.key.level]]) {
    const dt = document.createElement("dt");
    dt.textContent = k;
    const dd = document.createElement("dd");
    dd.textContent = typeof v === "number" ? num(v) : v;
    $("credits").append(dt, dd);
  }
  await loadLedger();
  const admin = atLeast("admin");
  $("key-form").hidden = !admin;
  $("key-table").hidden = !admin;
  $("keys-note").textContent = admin ? "" : "Listing and creating keys needs an admin key.";
  $("webhooks").hidden = !admin;
  if (!admin) return;
  await loadWebhooks();
  const keys = await api("/v1/keys");
  const body = $("key-table").tBodies[0];
  body.replaceChildren();
  for (const k of keys.data) {
    const row = body.insertRow();
    cell(row, k.name, "Name");
    cell(row, k.level, "Level");
    cell(row, k.prefix, "Starts with");
    cell(row, k.status + (k.status === "active" && k.revokedAt ? ` until ${when(k.revokedAt)}` : ""), "Status");
    cell(row, when(k.createdAt), "Created");
    const actions = cell(row, "");
    if (k.status === "active" && k.id !== account.key.id) {
      actions.append(button(`Revoke ${k.name}`, async () => {
        const delay = Number($("revoke-when").value);
        const at = delay ? new Date(Date.now() + delay * 1000) : null;
        if (!confirm(at ? `Revoke the key “${k.name}” at ${at.toLocaleString()}?` : `Revoke the key “${k.name}” now?`)) return;
        try {
          const query = at ? `?revokeAt=${encodeURIComponent(at.toISOString())}` : "";
          await api(`/v1/keys/${encodeURIComponent(k.id)}${query}`, { method: "DELETE" });
          say(at ? `${k.name} will stop working at ${at.toLocaleString()}.` : `Revoked ${k.name}.`);
          await loadAccount();
        } catch (err) { say(err.message, true); }
      }));
    }
  }
}

onSubmit("key-form", null, async () => {
  const made = await api("/v1/keys", { method: "POST", body: { name: $("key-name").value, level: $("key-level").value } });
  $("new-key-value").textContent = made.key;
  $("new-key").hidden = false;
  $("key-name").value = "";
  say(`Created ${made.name}.`);
  await loadAccount();
});

const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs, text) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

// What a movement did to the balance, for people.
function balanceChange(e) {
  const signed = (n) => (n > 0 ? `+${num(n)}` : num(n));
  if (e.entry === "grant") return signed(e.amount);
  if (e.entry === "reserve" || e.entry === "top_up") return `${signed(-e.amount)} (held)`;
  if (e.entry === "refund") return `${signed(e.amount)} (given back)`;
  if (e.entry === "capture") return `${num(e.amount)} held → used`;
  return num(e.amount);
}

// The balance after each movement of the last hundred, as a line over
// time; the latest ten as a table (the chart's text alternative).
async function loadLedger() {
  const page = await api("/v1/account/ledger?limit=100");
  const entries = [...page.data].reverse();
  const chart = $("ledger-chart");
  chart.replaceChildren();
  if (entries.length) {
    const [w, h, pad] = [600, 200, 40];
    const t0 = Date.parse(entries[0].createdAt), t1 = Math.max(Date.parse(entries.at(-1).createdAt), t0 + 1);
    // The axis spans the balances seen (a large balance's small moves
    // stay visible), labelled at both ends.
    const values = entries.map((e) => e.balanceAfter);
    const [low, high] = [Math.min(...values), Math.max(...values)];
    const span = Math.max(high - low, 1);
    const x = (e) => 2 * pad + ((Date.parse(e.createdAt) - t0) / (t1 - t0)) * (w - 2.5 * pad);
    const y = (e) => h - pad / 2 - ((e.balanceAfter - low) / span) * (h - pad);
    chart.append(svg("line", { class: "axis", x1: 2 * pad, y1: h - pad / 2, x2: w - pad / 2, y2: h - pad / 2 }));
    chart.append(svg("line", { class: "axis", x1: 2 * pad, y1: pad / 2, x2: 2 * pad, y2: h - pad / 2 }));
    chart.append(svg("text", { x: 4, y: pad / 2 + 4 }, num(high)));
    chart.append(svg("text", { x: 4, y: h - pad / 2 }, num(low)));
    // A step line: the balance holds until the next movement.
    let d = "";
    entries.forEach((e, i) => {
      d += i ? ` H ${x(e).toFixed(1)} V ${y(e).toFixed(1)}` : `M ${x(e).toFixed(1)} ${y(e).toFixed(1)}`;
    });
    chart.append(svg("path", { class: "line", d }));
  }
  const last = entries.at(-1);
  $("ledger-summary").textContent = entries.length
    ? `Balance after each of the last ${entries.length} movements (of ${page.pagination.total}), from ${when(entries[0].createdAt)} to ${when(last.createdAt)}: now ${creditsOf(last.balanceAfter)}.`
    : "No movements yet.";
  const body = $("ledger-table").tBodies[0];
  body.replaceChildren();
  for (const e of page.data.slice(0, 10)) {
    const row = body.insertRow();
    cell(row, when(e.createdAt), "When");
    cell(row, e.entry, "Movement");
    cell(row, balanceChange(e), "Change");
    cell(row, num(e.balanceAfter), "Balance after");
    cell(row, e.jobId || e.note || "", "Job");
  }
}

// ---- operator --------------------------------------------------------------

// Jobs queued and running by kind, from the server's metrics.
async function loadQueue() {
  const text = await (await fetch("/metrics")).text();
  const depth = new Map();
  for (const m of text.matchAll(/^mediagen_jobs\{kind="([^"]+)",status="(queued|processing)"\} (\d+)/gm)) {
    const [, kind, status, n] = m;
    if (Number(n) === 0) continue;
    const d = depth.get(kind) || { queued: 0, processing: 0 };
    d[status] = Number(n);
    depth.set(kind, d);
  }
  const body = $("queue-table").tBodies[0];
  body.replaceChildren();
  for (const [kind, d] of [...depth].sort()) {
    const row = body.insertRow();
    cell(row, kind, "Kind");
    cell(row, String(d.queued), "Queued");
    cell(row, String(d.processing), "Running");
  }
  if (!depth.size) cell(body.insertRow(), "Nothing is queued or running.").colSpan = 3;
}

async function loadOperator() {
  await loadQueue();
  const page = await api("/v1/accounts?limit=100");
  const body = $("accounts-table").tBodies[0];
  body.replaceChildren();
  const select = $("grant-account");
  const chosen = select.value;
  select.replaceChildren();
  for (const a of page.data) {
    const row = body.insertRow();
    cell(row, a.name, "Name");
    cell(row, a.id, "Id");
    cell(row, num(a.credits?.balance ?? a.balance), "Balance");
    cell(row, num(a.credits?.reserved ?? a.reserved), "Reserved");
    cell(row, num(a.credits?.used ?? a.used), "Used");
    cell(row, when(a.createdAt), "Created");
    select.add(new Option(`${a.name} (${a.id})`, a.id));
  }
  if (chosen) select.value = chosen;
}

onSubmit("grant-form", null, async () => {
  const id = $("grant-account").value;
  const body = { amount: Number($("grant-amount").value) };
  if ($("grant-note").value) body.note = $("grant-note").value;
  await api(`/v1/accounts/${encodeURIComponent(id)}/credits`, { method: "POST", body });
  say(`Granted ${body.amount} credits.`);
  $("grant-amount").value = "";
  $("grant-note").value = "";
  await loadOperator();
});

onSubmit("account-form", null, async () => {
  const made = await api("/v1/accounts", { method: "POST", body: { name: $("new-account-name").value, credits: Number($("new-account-credits").value) || 0 } });
  say(`Created the account ${made.name}.`);
  $("new-account-name").value = "";
  await loadOperator();
});

// ---- webhooks --------------------------------------------------------------

async function loadWebhooks() {
  const page = await api("/v1/webhooks");
  const body = $("webhook-table").tBodies[0];
  body.replaceChildren();
  for (const w of page.data) {
    const row = body.insertRow();
    cell(row, w.url, "URL");
    cell(row, w.events.join(", "), "Events");
    cell(row, when(w.createdAt), "Created");
    const actions = cell(row, "");
    actions.append(button(`Deliveries to ${w.url}`, () => loadDeliveries(w).catch((err) => say(err.message, true))), " ");
    actions.append(button(`Remove ${w.url}`, async () => {
      if (!confirm(`Stop sending events to ${w.url}?`)) return;
      try { await api(`/v1/webhooks/${encodeURIComponent(w.id)}`, { method: "DELETE" }); $("delivery-table").hidden = true; await loadWebhooks(); }
      catch (err) { say(err.message, true); }
    }));
  }
}

async function loadDeliveries(w) {
  const page = await api(`/v1/webhooks/${encodeURIComponent(w.id)}/deliveries`);
  $("delivery-caption").textContent = `Deliveries to ${w.url}, newest first`;
  const body = $("delivery-table").tBodies[0];
  body.replaceChildren();
  for (const d of page.data) {
    const row = body.insertRow();
    cell(row, d.event, "Event");
    cell(row, d.jobId, "Job");
    cell(row, d.status, "Status");
    cell(row, String(d.attempts), "Attempts");
    cell(row, d.lastStatus ? `HTTP ${d.lastStatus}` : d.lastError || "", "Last answer");
    cell(row, when(d.nextAttemptAt), "Next try");
  }
  if (!page.data.length) cell(body.insertRow(), "Nothing sent yet.").colSpan = 6;
  $("delivery-table").hidden = false;
}

onSubmit("webhook-form", null, async () => {
  const made = await api("/v1/webhooks", { method: "POST", body: { url: $("webhook-url").value } });
  $("new-webhook-secret").textContent = made.secret || "";
  $("new-webhook").hidden = !made.secret;
  $("webhook-url").value = "";
  say(`Events now go to ${made.url}.`);
  await loadWebhooks();
});

// ---- pages -----------------------------------------------------------------

async function route() {
  clearInterval(jobTimer);
  const signedIn = Boolean(account);
  $("sign-in").hidden = signedIn;
  $("nav").hidden = !signedIn;
  $("who").hidden = !signedIn;
  $("operator-link").hidden = !operator;
  let page = location.hash.slice(1);
  if (!pages.includes(page) || (page === "operator" && !operator)) page = "voices";
  for (const p of pages) $(p).hidden = !signedIn || p !== page;
  for (const a of $("nav").querySelectorAll("a")) {
    if (a.getAttribute("href") === `#${page}`) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  if (!signedIn) { $("key").focus(); return; }
  $("who-level").textContent = `${account.name || account.id} · ${account.key.level} key`;
  try {
    if (page === "voices") {
      await loadVoices();
      await fillComparePickers();
      for (const form of ["compare-form", "clone-form"]) {
        for (const b of $(form).querySelectorAll("button")) b.disabled = !atLeast("write");
      }
    }
    if (page === "speech") {
      await loadVoiceChoices();
      const canSpeak = atLeast("write");
      $("tts-form").querySelector("button[type=submit]").disabled = !canSpeak;
      if (!canSpeak) say("Speaking needs a write key; this one can only read.");
    }
    if (page === "dub") await loadDubTargets();
    if (page === "avatars") await loadAvatars();
    for (const [p, forms] of [["transcribe", ["stt-form"]], ["dub", ["dub-form"]], ["trim", ["trim-form"]], ["create", ["sound-form", "image-form"]], ["avatars", ["avatar-form", "expand-form"]]]) {
      if (page === p && !atLeast("write")) {
        for (const form of forms) for (const b of $(form).querySelectorAll("button")) b.disabled = true;
        say("This needs a write key; this one can only read.");
      }
    }
    if (page === "jobs") {
      await loadJobs();
      jobTimer = setInterval(() => loadJobs().catch((err) => say(err.message, true)), 2000);
    }
    if (page === "account") await loadAccount();
    if (page === "operator") await loadOperator();
  } catch (err) {
    say(err.message, true);
  }
}

window.addEventListener("hashchange", () => { say(""); route(); });

(async () => {
  if (sessionStorage.getItem(KEY)) {
    try { account = await api("/v1/account"); await probeOperator(); } catch { sessionStorage.removeItem(KEY); }
  }
  route();
})();
