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
// sees it after every poll, and once more when it ends. Polls often while
// a job is young (short jobs finish between polls otherwise), then less.
async function finished(job, each = () => {}) {
  const since = Date.now();
  while (job.status === "queued" || job.status === "processing") {
    each(job);
    await new Promise((r) => setTimeout(r, Date.now() - since < 20000 ? 250 : 1000));
    job = await api(`/v1/jobs/${encodeURIComponent(job.id)}`);
  }
  each(job);
  if (job.status !== "completed") throw new Error(job.error?.message || `The job ${job.status}.`);
  return job;
}

// A capability request: `json` (a body) or `parts` (multipart: [name,
// string or File] pairs), as the form would send it.
const formOf = (parts) => {
  const form = new FormData();
  for (const [k, v] of parts) {
    if (v instanceof File) form.append(k, v, v.name);
    else form.append(k, v);
  }
  return form;
};

// Sends a capability request and follows its job to the end: answered at
// once (202) so its progress can be shown as it moves.
async function runJob(req, track) {
  const job = await api(req.path, {
    method: "POST",
    body: req.json,
    form: req.parts ? formOf(req.parts) : undefined,
    headers: { Prefer: "respond-async" },
  });
  return job.status ? finished(job, track) : job;
}

// The same request as a curl command: the key is left to the shell
// (`$MEDIAGEN_API_KEY`), text parts go as `--form-string` (curl reads
// `@file` in `-F` values), files by their name.
const shellWord = (s) => `'${String(s).replace(/'/g, `'\\''`)}'`;
function curlOf(req) {
  const lines = [`curl -sS -X POST ${shellWord(location.origin + req.path)}`, `-H "Authorization: Bearer $MEDIAGEN_API_KEY"`];
  if (req.json) lines.push("-H 'Content-Type: application/json'", `-d ${shellWord(JSON.stringify(req.json))}`);
  for (const [k, v] of req.parts || []) {
    lines.push(v instanceof File ? `-F ${shellWord(`${k}=@${v.name}`)}` : `--form-string ${shellWord(`${k}=${v}`)}`);
  }
  return lines.join(" \\\n  ");
}

// Copies `text`; where the browser does not allow it (a page not served
// from localhost or HTTPS), the text is shown selected to copy by hand.
async function copy(text, button) {
  const was = button.dataset.label || button.textContent;
  button.dataset.label = was;
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = "Copied";
  } catch {
    const area = document.createElement("textarea");
    area.readOnly = true;
    area.value = text;
    area.setAttribute("aria-label", "Copy this text");
    button.after(area);
    area.select();
    button.textContent = "Select and copy";
  }
  setTimeout(() => { button.textContent = was; }, 2000);
}

document.addEventListener("click", (e) => {
  const b = e.target.closest("button.copy[data-copy]");
  if (b) copy($(b.dataset.copy).textContent, b);
});

// ---- feedback beside the form ----------------------------------------------

// Where a form's messages go: at its end (for a table, right after it).
// While it works: a spinner, what it is doing, the time spent and the
// job's progress; then how it ended. Errors are announced
// (`role="alert"`); the banner at the top is for the page's own messages.
function feedbackOf(form) {
  const inside = form.tagName === "FORM";
  let box = inside ? form.lastElementChild : form.nextElementSibling;
  if (box?.classList.contains("feedback")) return box;
  box = document.createElement("div");
  box.className = "feedback";
  const what = document.createElement("p");
  what.className = "what";
  what.setAttribute("role", "status");
  const error = document.createElement("p");
  error.className = "error";
  error.setAttribute("role", "alert");
  box.append(what, error);
  box.hidden = true;
  if (inside) form.append(box);
  else form.after(box);
  return box;
}

// A message beside a form: `kind` is "busy", "done", "error" or "note".
function tell(form, message, kind = "done") {
  const box = feedbackOf(typeof form === "string" ? $(form) : form);
  box.className = `feedback ${kind}`;
  box.querySelector(".what").textContent = kind === "error" ? "" : message;
  box.querySelector(".error").textContent = kind === "error" ? message : "";
  box.querySelector(".progress")?.remove();
  box.hidden = !message;
}

const seconds = (ms) => (ms < 10000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 1000)} s`);

// A form's submit: its button is disabled while `work` runs, and beside
// the form the work is followed (`work(track)`: `track(job, stage)` after
// each poll shows the job's progress as it moves) and its end reported
// (`work` returns the message, else "Done in …").
function onSubmit(id, busy, work) {
  const form = $(id);
  feedbackOf(form);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const submit = form.querySelector("button[type=submit]");
    submit.disabled = true;
    const started = performance.now();
    const box = feedbackOf(form);
    let stage = busy || "Working…";
    tell(form, stage, "busy");
    const spent = document.createElement("span");
    spent.className = "elapsed";
    spent.setAttribute("aria-hidden", "true");
    box.querySelector(".what").after(spent);
    const tick = setInterval(() => { spent.textContent = seconds(performance.now() - started); }, 250);
    const track = (job, named) => {
      let bar = box.querySelector("progress");
      if (!bar) {
        bar = document.createElement("progress");
        bar.className = "progress";
        bar.max = 100;
        bar.setAttribute("aria-label", "Progress");
        spent.after(bar);
      }
      bar.value = job.progress ?? 0;
      const now = named || stage;
      if (now !== stage) { stage = now; box.querySelector(".what").textContent = stage; }
    };
    try {
      const message = await work(track);
      tell(form, message || `Done in ${seconds(performance.now() - started)}.`);
    } catch (err) {
      tell(form, err.message, "error");
    } finally {
      clearInterval(tick);
      spent.remove();
      submit.disabled = false;
    }
  });
}

// A form's "Copy as curl" button: copies the request `build()` makes.
function curlButton(id, build) {
  const b = $(id).querySelector("button.curl");
  b.addEventListener("click", async () => {
    try { await copy(curlOf(await build()), b); }
    catch (err) { tell(id, err.message, "error"); }
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
      tell(b.closest("form"), `The microphone could not be used: ${err.message}`, "error");
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
    tell("sign-in-form", "");
    if (!pages.includes(location.hash.slice(1))) location.hash = "#voices";
    route();
  } catch (err) {
    tell("sign-in-form", err.status === 401 ? "That key was not accepted." : `Sign-in failed: ${err.message}`, "error");
  }
});
$("sign-out").addEventListener("click", signOut);

// ---- languages and voices ---------------------------------------------------

// Language names for people ("es-ES" → "Spanish (Spain)"), from the
// browser's own tables: nothing is fetched.
const languageNames = new Intl.DisplayNames(["en"], { type: "language" });
function languageName(code) {
  try { return languageNames.of(code) || code; } catch { return code; }
}
const byName = (a, b) => a.label.localeCompare(b.label);
// A language picker: `codes` by name, after what `select` already offers.
function fillLanguages(select, codes) {
  if (select.options.length > 1) return;
  const items = [...new Set(codes)].map((code) => ({ code, label: languageName(code) })).sort(byName);
  for (const { code, label } of items) select.add(new Option(label === code ? code : `${label} (${code})`, code));
}

// Every voice the key can use, the account's cloned voices first: the
// catalog is read page by page to its end.
let voiceList = null;
async function allVoices() {
  if (voiceList) return voiceList;
  const list = [];
  for (let page = 1; page < 50; page++) {
    const p = await api(`/v1/voices?limit=100&page=${page}`);
    list.push(...p.data);
    if (!p.pagination.hasMore) break;
  }
  voiceList = [...list.filter((v) => v.category === "cloned"), ...list.filter((v) => v.category !== "cloned")];
  return voiceList;
}
// A voice in a picker: its name, its language where it names a region
// ("American English"), gender and engine.
const voiceLabel = (v) => `${v.name} (${[v.language.includes("-") ? languageName(v.language) : "", v.gender, v.engine].filter(Boolean).join(", ")})`;
// Voices are grouped by language, regions together ("English" holds the
// American and British voices).
const voiceGroup = (v) => (v.category === "cloned" ? "Your voices" : languageName(v.language.split("-")[0]));

// A voice picker: the voices grouped by language (the account's own
// first), narrowed by the search box before it (every word must match the
// name, language, gender or engine). The voice picked stays picked.
async function fillVoices(select, query = "") {
  const voices = await allVoices();
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  const keep = select.value;
  const groups = new Map();
  for (const v of voices) {
    const about = `${voiceLabel(v)} ${voiceGroup(v)} ${v.language}`.toLowerCase();
    if (!words.every((w) => about.includes(w)) && v.id !== keep) continue;
    const g = voiceGroup(v);
    if (!groups.has(g)) groups.set(g, []);
    groups.get(g).push(v);
  }
  const names = [...groups.keys()].sort((a, b) => (a === "Your voices" ? -1 : b === "Your voices" ? 1 : a.localeCompare(b)));
  select.replaceChildren();
  for (const g of names) {
    const group = document.createElement("optgroup");
    group.label = g;
    for (const v of groups.get(g)) group.append(new Option(voiceLabel(v), v.id));
    select.append(group);
  }
  if (keep && [...select.options].some((o) => o.value === keep)) select.value = keep;
  // Nothing picked yet: the best voice there is (the catalog's own order).
  else if (!query && voices.length) select.value = voices.find((v) => v.category !== "cloned")?.id || voices[0].id;
}

function voicePicker(id) {
  const find = $(`${id}-find`);
  let timer = null;
  find.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(() => fillVoices($(id), find.value).then(() => $(id).dispatchEvent(new Event("change"))), 150);
  });
}
["tts-voice", "compare-a", "compare-b"].forEach(voicePicker);

// ---- voices ----------------------------------------------------------------

async function loadVoices() {
  fillLanguages($("vf-language"), (await allVoices()).map((v) => v.language.split("-")[0]));
  const form = new FormData($("voice-filter"));
  const q = new URLSearchParams({ page: voicePage, limit: 20 });
  for (const [k, v] of form) if (v) q.set(k, v);
  const page = await api(`/v1/voices?${q}`);
  const body = $("voice-table").tBodies[0];
  body.replaceChildren();
  for (const v of page.data) {
    const row = body.insertRow();
    cell(row, v.name, "Name");
    const lang = cell(row, languageName(v.language), "Language");
    lang.dataset.code = v.language;
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
  $("voice-count").textContent = `${num(p.total)} voice${p.total === 1 ? "" : "s"} (page ${p.page})`;
  $("voices-prev").disabled = p.page <= 1;
  $("voices-next").disabled = !p.hasMore;
}

$("voice-filter").addEventListener("submit", (e) => {
  e.preventDefault();
  voicePage = 1;
  loadVoices().catch((err) => tell("voice-filter", err.message, "error"));
});
$("voices-prev").addEventListener("click", () => { voicePage--; loadVoices().catch((err) => tell("voice-filter", err.message, "error")); });
$("voices-next").addEventListener("click", () => { voicePage++; loadVoices().catch((err) => tell("voice-filter", err.message, "error")); });

// The two pickers of the comparison, on two different voices.
async function fillComparePickers() {
  const [a, b] = [$("compare-a"), $("compare-b")];
  if (!a.options.length) await fillVoices(a);
  if (!b.options.length) await fillVoices(b);
  // Two different voices: the second the next best there is.
  if (b.options.length > 1 && a.value === b.value) {
    const voices = (await allVoices()).filter((v) => v.category !== "cloned");
    b.value = (voices.find((v) => v.id !== a.value && v.gender !== voices[0].gender) || voices[1]).id;
  }
}

// Two voices saying the same sentence, side by side.
onSubmit("compare-form", "Speaking the sentence in both voices…", async () => {
  const ids = [$("compare-a").value, $("compare-b").value];
  const jobs = await Promise.all(ids.map((voiceId) =>
    runJob({ path: "/v1/text-to-speech", json: { text: $("compare-text").value, voiceId, format: "mp3" } })));
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

function cloneRequest() {
  const files = [...$("clone-files").files, ...cloneRecordings];
  if (!files.length) throw new Error("Add at least one sample.");
  const parts = [["name", $("clone-name").value], ["consent", $("clone-consent").checked ? "true" : "false"]];
  if ($("clone-language").value) parts.push(["language", $("clone-language").value]);
  const quality = $("clone-quality").value;
  parts.push(quality === "world" ? ["method", "world"] : ["quality", quality]);
  for (const f of files) parts.push(["files", f]);
  return { path: "/v1/voices", parts };
}
curlButton("clone-form", cloneRequest);

onSubmit("clone-form", "Cloning the voice…", async (track) => {
  let voice = await runJob(cloneRequest(), track);
  if (voice.status) voice = await api(`/v1/voices/${encodeURIComponent(voice.result.voiceId)}`);
  const sim = voice.similarity?.samples;
  const held = voice.similarity?.heldOut;
  const base = (voiceList || []).find((v) => v.id === voice.baseVoiceId);
  $("clone-meta").textContent = held
    ? `${voice.name}: ${languageName(voice.language)}, a neural voice of its own; likeness to samples it was not made from ${held.clone.toFixed(2)}, the nearest stock voice ${held.bestStock.toFixed(2)} (0.9 and more is the same voice, 0.5–0.65 different people)`
    : `${voice.name}: ${languageName(voice.language)}, spoken by ${base ? voiceLabel(base) : voice.baseVoiceId} converted toward the samples`
      + (typeof sim === "number" ? `; likeness to the samples ${sim.toFixed(2)} (0.9 and more is the same voice, 0.5–0.65 different people)` : "");
  if (voice.previewUrl) $("clone-audio").src = voice.previewUrl;
  $("clone-result").hidden = false;
  voiceList = null;
  for (const id of ["tts-voice", "compare-a", "compare-b"]) $(id).replaceChildren();
  cloneRecordings = [];
  // The list shows the account's cloned voices, the new one among them.
  $("voice-filter").reset();
  $("vf-category").value = "cloned";
  voicePage = 1;
  await loadVoices();
  await fillComparePickers();
  return `Cloned ${voice.name}.`;
});

// ---- text to speech --------------------------------------------------------

// The voice picker, with the voice last chosen on the voices page selected.
async function loadVoiceChoices() {
  const select = $("tts-voice");
  // A voice chosen on the voices page is offered whatever was searched.
  if (chosen) $("tts-voice-find").value = "";
  if (!select.options.length || chosen) await fillVoices(select);
  if (chosen) {
    select.value = chosen.id;
    chosen = null;
    estimate();
  }
}

$("tts-preview").addEventListener("click", async () => {
  const v = (await allVoices()).find((x) => x.id === $("tts-voice").value);
  if (!v) return;
  const player = new Audio(v.previewUrl);
  player.play().then(() => tell("tts-form", `Playing the preview of ${v.name}.`, "note"),
    () => tell("tts-form", `No preview of ${v.name} is ready yet.`, "note"));
});

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
curlButton("tts-form", () => ({ path: $("tts-stream").checked ? "/v1/text-to-speech/stream" : "/v1/text-to-speech", json: ttsBody(false) }));

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

onSubmit("tts-form", "Speaking…", async (track) => {
  if ($("tts-stream").checked) {
    await streamSpeech();
  } else {
    const job = await runJob({ path: "/v1/text-to-speech", json: ttsBody(false) }, track);
    const r = job.result;
    $("tts-audio").src = r.audioUrl;
    $("tts-meta").textContent = `${r.duration.toFixed(2)} s, ${r.format} at ${r.sampleRate} Hz, ${creditsOf(job.credits)}`;
    showWords(r.words);
    $("tts-result").hidden = false;
  }
  await loadHistory("speech");
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

function sttRequest() {
  if (!sttInput) throw new Error("Choose a file or record first.");
  const parts = [["file", sttInput], ["responseFormat", "verbose_json"]];
  if ($("stt-language").value) parts.push(["language", $("stt-language").value]);
  if ($("stt-diarize").checked) parts.push(["diarize", "true"]);
  return { path: "/v1/speech-to-text", parts };
}
curlButton("stt-form", sttRequest);

// The languages the recogniser hears, by name.
async function loadSttLanguages() {
  if ($("stt-language").options.length > 1) return;
  const { languages } = await api("/v1/speech-to-text/languages");
  fillLanguages($("stt-language"), languages.map((l) => l.code));
}

onSubmit("stt-form", "Transcribing…", async (track) => {
  const job = await runJob(sttRequest(), track);
  const r = job.result;
  $("stt-audio").src = URL.createObjectURL(sttInput);
  $("stt-meta").textContent = `${r.duration.toFixed(1)} s, ${languageName(r.language)}, ${creditsOf(job.credits)}`
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
  await loadHistory("transcribe");
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
  fillLanguages(select, targets);
  if (targets.includes("es")) select.value = "es";
}

// The stage a dub's progress stands for (docs/dubbing.md).
const stage = (p) => (p < 30 ? "Transcribing" : p < 40 ? "Translating" : p < 85 ? "Speaking the lines" : p < 90 ? "Mixing" : "Muxing and writing subtitles");
const dubTrack = (track) => (job) => track(job, `${stage(job.progress)}…`);

function showDub(job) {
  dubJob = job;
  const r = job.result;
  $("dub-dubbed").src = r.videoUrl || r.audioUrl;
  $("dub-meta").textContent = `${languageName(r.sourceLanguage)} → ${languageName(r.targetLanguage)}, ${r.duration.toFixed(1)} s, ${creditsOf(job.credits)}`
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
      tell($("dub-lines"), `Re-dubbing line ${i + 1}…`, "busy");
      try {
        const edit = await api(`/v1/dubbing/${encodeURIComponent(dubJob.id)}/segments`,
          { method: "POST", body: { segments: [{ index: i, translatedText: text.value }] } });
        showDub(await finished(edit, (job) => tell($("dub-lines"), `Re-dubbing line ${i + 1}: ${stage(job.progress).toLowerCase()} (${job.progress} %)…`, "busy")));
        tell($("dub-lines"), `Line ${i + 1} re-dubbed.`);
        await loadHistory("dub");
      } catch (err) {
        tell($("dub-lines"), err.message, "error");
        ev.target.disabled = false;
      }
    }));
  });
  $("dub-result").hidden = false;
}

function dubRequest() {
  const file = $("dub-file").files[0];
  if (!file) throw new Error("Choose a file first.");
  return { path: "/v1/dubbing", parts: [["file", file], ["targetLanguage", $("dub-target").value]] };
}
curlButton("dub-form", dubRequest);

onSubmit("dub-form", "Uploading and dubbing…", async (track) => {
  $("dub-result").hidden = true;
  const req = dubRequest();
  const done = await runJob(req, dubTrack(track));
  $("dub-original").src = URL.createObjectURL(req.parts[0][1]);
  showDub(done);
  await loadHistory("dub");
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
    tell("trim-form", `A range needs 0 ≤ start < end ≤ ${d.toFixed(2)} s.`, "error");
    return;
  }
  tell("trim-form", "");
  trimRanges.push({ start, end });
  $("trim-start").value = "";
  $("trim-end").value = "";
  drawRanges();
});

function trimRequest() {
  if (!trimRanges.length) throw new Error("Add at least one range.");
  return { path: "/v1/video/trim", parts: [["file", $("trim-file").files[0]], ["ranges", JSON.stringify(trimRanges)]] };
}
curlButton("trim-form", trimRequest);

onSubmit("trim-form", "Trimming…", async (track) => {
  const job = await runJob(trimRequest(), track);
  const r = job.result;
  $("trim-output").src = r.videoUrl;
  $("trim-meta").textContent = `${r.duration.toFixed(2)} s from ${r.ranges.length} range${r.ranges.length === 1 ? "" : "s"}, ${r.width}×${r.height}, ${creditsOf(job.credits)}`;
  $("trim-result").hidden = false;
  await loadHistory("trim");
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

// A refused prompt: the words the generator knows, said for people (the
// API's message is written for developers).
async function showRefused(kind, err) {
  $("refused-why").textContent = kind === "sound"
    ? "The sound generator makes sounds from these words; a prompt needs at least one of them."
    : "The image generator draws these things; a prompt needs at least one of them.";
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
}

// Generates a sound or an image into the gallery; a prompt the generator
// cannot make shows what it understands.
async function generate(kind, req, track) {
  $("refused").hidden = true;
  try {
    addToGallery(kind, req.json.prompt, await runJob(req, track));
    await loadHistory("create");
  } catch (err) {
    if (err.code !== "unsupported_prompt") throw err;
    await showRefused(kind, err);
    throw new Error(`Nothing in “${req.json.prompt}” is something the ${kind} generator knows; the words it knows are listed below.`);
  }
}

const optional = (id) => ($(id).value === "" ? undefined : Number($(id).value));

function soundRequest() {
  const prompt = $("sound-prompt").value.trim();
  return { path: "/v1/sound-generation", json: { prompt, duration: optional("sound-duration"), seed: optional("sound-seed"), loop: $("sound-loop").checked } };
}
function imageRequest() {
  const prompt = $("image-prompt").value.trim();
  const size = Number($("image-size").value);
  return { path: "/v1/image-generation", json: { prompt, width: size, height: size, n: optional("image-n"), seed: optional("image-seed"), style: $("image-style").value || undefined } };
}
curlButton("sound-form", soundRequest);
curlButton("image-form", imageRequest);
onSubmit("sound-form", "Generating the sound…", (track) => generate("sound", soundRequest(), track));
onSubmit("image-form", "Generating the image…", (track) => generate("image", imageRequest(), track));

// ---- avatars ---------------------------------------------------------------

// A video that plays on its own button (controls over a small picture
// would cover the face).
function previewVideo(url, poster, name) {
  const video = document.createElement("video");
  video.preload = "none";
  video.poster = poster;
  video.src = url;
  video.playsInline = true;
  video.setAttribute("aria-label", `Preview of ${name}`);
  const play = button(`Play ${name}`, () => (video.paused ? video.play().catch(() => {}) : video.pause()));
  video.addEventListener("click", () => play.click());
  video.addEventListener("play", () => { play.textContent = `Pause ${name}`; });
  video.addEventListener("pause", () => { play.textContent = `Play ${name}`; });
  return [video, play];
}

async function loadAvatars() {
  const page = await api("/v1/avatars?limit=100");
  const gallery = $("avatar-gallery");
  gallery.replaceChildren();
  const select = $("expand-avatar");
  const chosen = select.value;
  select.replaceChildren();
  for (const a of page.data) {
    const li = document.createElement("li");
    const name = document.createElement("p");
    name.textContent = a.name;
    const meta = document.createElement("p");
    meta.className = "meta";
    meta.textContent = `${a.style}, ${a.orientation}, ${a.width}×${a.height}, ${a.duration.toFixed(1)} s`;
    li.append(...previewVideo(a.previewVideoUrl, a.posterUrl, a.name), name, meta);
    gallery.append(li);
    select.add(new Option(a.name, a.id));
  }
  if (chosen) select.value = chosen;
}

onSubmit("avatar-form", "Uploading the avatar…", async (track) => {
  const file = $("avatar-file").files[0];
  let avatar = await runJob({ path: "/v1/avatars", parts: [["file", file], ["name", $("avatar-name").value], ["gender", $("avatar-gender").value]] }, track);
  if (avatar.status) avatar = await api(`/v1/avatars/${encodeURIComponent(avatar.result.avatarId)}`);
  $("avatar-form").reset();
  await loadAvatars();
  return `Added ${avatar.name}.`;
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

const expandRequest = () => ({ path: "/v1/avatar-expansion", json: { avatarId: $("expand-avatar").value, duration: Number($("expand-seconds").value), mode: $("expand-mode").value } });
curlButton("expand-form", expandRequest);

onSubmit("expand-form", "Expanding…", async (track) => {
  const job = await runJob(expandRequest(), track);
  $("expand-video").src = job.result.videoUrl;
  seamReport(job.result);
  $("expand-result").hidden = false;
  await loadHistory("avatars");
});

// ---- jobs and histories ----------------------------------------------------

const kindNames = {
  tts: "Speech", stt: "Transcript", dubbing: "Dub", "dubbing.edit": "Dub edit", "video.trim": "Trim",
  "avatar.expand": "Avatar expansion", "avatar.create": "Avatar upload", sound: "Sound", image: "Image",
  "voice.clone": "Voice clone", "voice.change": "Voice change",
};
const kindName = (k) => kindNames[k] || k;

// "just now", "4 min ago", "3 h ago", then the date.
function ago(iso) {
  const s = (Date.now() - Date.parse(iso)) / 1000;
  if (s < 45) return "just now";
  if (s < 3600) return `${Math.max(1, Math.round(s / 60))} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return new Date(iso).toLocaleDateString();
}
const shortId = (id) => `…${id.slice(-6)}`;

// The names of the uploaded files jobs read, asked once each.
const fileNames = new Map();
async function nameFiles(jobs) {
  const ids = [...new Set(jobs.map((j) => j.fileId).filter((id) => id && !fileNames.has(id)))];
  await Promise.all(ids.map(async (id) => {
    fileNames.set(id, await api(`/v1/files/${encodeURIComponent(id)}`).then((f) => f.filename, () => "a file no longer kept"));
  }));
}

// What a job was asked, in a line: its text or prompt, or its file's
// name; a transcript adds its first words.
function described(j) {
  let what = j.summary ? `“${j.summary}”` : j.fileId ? fileNames.get(j.fileId) || "a file" : kindName(j.kind);
  const text = j.result?.text?.trim();
  if (text) what += `: “${text.length > 60 ? `${text.slice(0, 60).trimEnd()}…` : text}”`;
  return what;
}

// A finished job's output, playable where it stands (its sound, video or
// first picture), with a download and a copy of its link.
function resultPlayer(j, label) {
  const r = j.result || {};
  const url = r.videoUrl || r.audioUrl || r.imageUrl || r.images?.[0]?.imageUrl;
  if (!url) return [];
  let media;
  if (!r.videoUrl && !r.audioUrl) {
    media = document.createElement("img");
    media.alt = `Result of ${label}`;
    media.className = "thumb";
  } else {
    media = document.createElement(r.videoUrl ? "video" : "audio");
    media.controls = true;
    media.preload = "none";
    media.setAttribute("aria-label", `Result of ${label}`);
  }
  media.src = url;
  const save = document.createElement("a");
  save.href = url;
  save.download = "";
  save.className = "download";
  save.textContent = "Download";
  save.setAttribute("aria-label", `Download the result of ${label}`);
  const link = button("Copy link", (e) => copy(url, e.target));
  link.setAttribute("aria-label", `Copy link to the result of ${label}`);
  return [media, " ", save, " ", link];
}

// The list, refreshed in place: a row is rebuilt only when its job
// changed, so a result being played keeps playing.
const jobRows = new Map();
const jobState = (j) => `${j.status}/${j.progress}/${j.credits}`;

function jobRow(j) {
  const row = document.createElement("tr");
  row.dataset.state = jobState(j);
  row.dataset.id = j.id;
  row.dataset.kind = j.kind;
  const label = `${kindName(j.kind)} ${shortId(j.id)}`;
  cell(row, described(j), "What").className = "what";
  cell(row, kindName(j.kind), "Kind");
  cell(row, j.status, "Status").className = `status-${j.status}`;
  const bar = document.createElement("progress");
  bar.max = 100;
  bar.value = j.progress;
  bar.setAttribute("aria-label", `Progress of ${label}`);
  const pct = document.createElement("span");
  pct.textContent = ` ${j.progress} %`;
  cell(row, bar, "Progress").append(pct);
  cell(row, creditsOf(j.credits), "Credits");
  const t = cell(row, ago(j.createdAt), "When");
  t.className = "when";
  t.dataset.at = j.createdAt;
  t.title = when(j.createdAt);
  const id = cell(row, shortId(j.id), "Id");
  id.title = j.id;
  const copyId = button("Copy id", (e) => copy(j.id, e.target));
  copyId.setAttribute("aria-label", `Copy id of ${label}`);
  id.append(" ", copyId);
  const actions = cell(row, "");
  if ((j.status === "queued" || j.status === "processing") && atLeast("write")) {
    const cancel = button("Cancel", async () => {
      try { await api(`/v1/jobs/${encodeURIComponent(j.id)}`, { method: "DELETE" }); await loadJobs(); }
      catch (err) { tell($("job-table"), err.message, "error"); }
    });
    cancel.setAttribute("aria-label", `Cancel ${label}`);
    cancel.dataset.job = j.id;
    actions.append(cancel, " ");
  }
  actions.append(...resultPlayer(j, label));
  return row;
}

async function loadJobs() {
  const page = await api("/v1/jobs?limit=20");
  await nameFiles(page.data);
  const body = $("job-table").tBodies[0];
  const rows = page.data.map((j) => {
    const old = jobRows.get(j.id);
    if (old && old.dataset.state === jobState(j)) return old;
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
  for (const t of body.querySelectorAll("td.when")) t.textContent = ago(t.dataset.at);
}

// A capability page's history: the account's latest jobs of its kinds,
// each with what was asked, when, how it ended, and its result to play,
// download or link to.
async function loadHistory(page) {
  const box = $(page).querySelector(".history");
  const kinds = box.dataset.kinds.split(" ");
  const lists = await Promise.all(kinds.map((k) => api(`/v1/jobs?kind=${encodeURIComponent(k)}&limit=5`)));
  const jobs = lists.flatMap((l) => l.data).sort((a, b) => b.createdAt.localeCompare(a.createdAt)).slice(0, 5);
  await nameFiles(jobs);
  const list = box.querySelector("ul");
  list.replaceChildren();
  for (const j of jobs) {
    const li = document.createElement("li");
    li.dataset.id = j.id;
    const what = document.createElement("p");
    what.className = "what";
    what.textContent = described(j);
    const meta = document.createElement("p");
    meta.className = "meta";
    meta.textContent = `${ago(j.createdAt)} · ${j.status}${j.status === "failed" && j.error ? `: ${j.error.message}` : ""} · ${creditsOf(j.credits)}`;
    li.append(what, meta, ...resultPlayer(j, `${kindName(j.kind)} ${shortId(j.id)}`));
    list.append(li);
  }
  if (!jobs.length) {
    const li = document.createElement("li");
    li.textContent = "Nothing yet.";
    list.append(li);
  }
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
          await loadAccount();
          tell($("key-table"), at ? `${k.name} will stop working at ${at.toLocaleString()}.` : `Revoked ${k.name}.`);
        } catch (err) { tell($("key-table"), err.message, "error"); }
      }));
    }
  }
}

onSubmit("key-form", null, async () => {
  const made = await api("/v1/keys", { method: "POST", body: { name: $("key-name").value, level: $("key-level").value } });
  $("new-key-value").textContent = made.key;
  $("new-key").hidden = false;
  $("key-name").value = "";
  await loadAccount();
  return `Created ${made.name}: copy its key below now.`;
});

const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs, text) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

// A change of balance, signed.
const change = (n) => (n > 0 ? `+${creditsOf(n)}` : n < 0 ? `−${creditsOf(-n)}` : "no change");

// A ledger entry's name, for people (the API's term after it).
const movementNames = { grant: "added", reserve: "held", top_up: "held (more)", refund: "given back", capture: "used" };
const movement = (e) => `${movementNames[e.entry] || e.entry} (${e.entry})`;

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
    // The axis starts at zero (a small spend looks small); the summary
    // gives the change in numbers.
    const values = entries.map((e) => e.balanceAfter);
    const [low, high] = [0, Math.max(...values, 1)];
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
    ? `Balance after each of the last ${num(entries.length)} movements (of ${num(page.pagination.total)}), from ${when(entries[0].createdAt)} to ${when(last.createdAt)}: now ${creditsOf(last.balanceAfter)}, ${change(last.balanceAfter - entries[0].balanceAfter)} since the first of them.`
    : "No movements yet.";
  const body = $("ledger-table").tBodies[0];
  body.replaceChildren();
  for (const e of page.data.slice(0, 10)) {
    const row = body.insertRow();
    cell(row, when(e.createdAt), "When");
    cell(row, movement(e), "Movement");
    cell(row, balanceChange(e), "Change");
    cell(row, num(e.balanceAfter), "Balance after");
    cell(row, e.jobId || e.note || "", "Job");
  }
}

// ---- operator --------------------------------------------------------------

// Jobs queued and running by kind, from the server's metrics (the
// operator's key reads them).
async function loadQueue() {
  const text = await (await fetch("/metrics", { headers: authorization() })).text();
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
  $("grant-amount").value = "";
  $("grant-note").value = "";
  await loadOperator();
  return `Granted ${creditsOf(body.amount)}.`;
});

onSubmit("account-form", null, async () => {
  const made = await api("/v1/accounts", { method: "POST", body: { name: $("new-account-name").value, credits: Number($("new-account-credits").value) || 0 } });
  $("new-account-name").value = "";
  await loadOperator();
  return `Created the account ${made.name}.`;
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
    actions.append(button(`Deliveries to ${w.url}`, () => loadDeliveries(w).catch((err) => tell($("webhook-table"), err.message, "error"))), " ");
    actions.append(button(`Remove ${w.url}`, async () => {
      if (!confirm(`Stop sending events to ${w.url}?`)) return;
      try { await api(`/v1/webhooks/${encodeURIComponent(w.id)}`, { method: "DELETE" }); $("delivery-table").hidden = true; await loadWebhooks(); }
      catch (err) { tell($("webhook-table"), err.message, "error"); }
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
  await loadWebhooks();
  return `Events now go to ${made.url}.`;
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
      fillLanguages($("clone-language"), (await allVoices()).map((v) => v.language.split("-")[0]));
      for (const form of ["compare-form", "clone-form"]) {
        for (const b of $(form).querySelectorAll("button")) b.disabled = !atLeast("write");
      }
    }
    if (page === "speech") {
      await loadVoiceChoices();
      const canSpeak = atLeast("write");
      $("tts-form").querySelector("button[type=submit]").disabled = !canSpeak;
      if (!canSpeak) tell("tts-form", "Speaking needs a write key; this one can only read.", "note");
    }
    if (page === "transcribe") await loadSttLanguages();
    if (page === "dub") await loadDubTargets();
    if (page === "avatars") await loadAvatars();
    if ($(page).querySelector(".history")) await loadHistory(page);
    for (const [p, forms] of [["transcribe", ["stt-form"]], ["dub", ["dub-form"]], ["trim", ["trim-form"]], ["create", ["sound-form", "image-form"]], ["avatars", ["avatar-form", "expand-form"]]]) {
      if (page === p && !atLeast("write")) {
        for (const form of forms) for (const b of $(form).querySelectorAll("button")) b.disabled = true;
        tell(forms[0], "This needs a write key; this one can only read.", "note");
      }
    }
    if (page === "jobs") {
      await loadJobs();
      jobTimer = setInterval(() => loadJobs().catch((err) => tell($("job-table"), err.message, "error")), 2000);
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
