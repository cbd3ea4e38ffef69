// Mediagen console: a page per section (the URL's hash), all through the
// public API with the signed-in key. The key lives in this tab's session
// storage and is sent only to this origin. Text from the API is always set
// as text (never parsed as HTML).

const KEY = "mediagen.key";
const $ = (id) => document.getElementById(id);
const pages = ["voices", "speech", "jobs", "account"];
let account = null;
let voicePage = 1;
let chosen = null;
let jobTimer = null;

class ApiFailure extends Error {
  constructor(status, body) {
    super(body?.error?.message || `HTTP ${status}`);
    this.status = status;
    this.code = body?.error?.code;
  }
}

async function api(path, { method = "GET", body, headers = {} } = {}) {
  const init = { method, headers: { Authorization: `Bearer ${sessionStorage.getItem(KEY)}`, ...headers } };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
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
const atLeast = (level) => {
  const order = ["read", "write", "admin", "operator"];
  return account && order.indexOf(account.key.level) >= order.indexOf(level);
};

// Waits for a job the API answered with 202 (or still running).
async function finished(job) {
  while (job.status === "queued" || job.status === "processing") {
    await new Promise((r) => setTimeout(r, 500));
    job = await api(`/v1/jobs/${encodeURIComponent(job.id)}`);
  }
  return job;
}

// ---- sign-in ---------------------------------------------------------------

async function signIn(key) {
  sessionStorage.setItem(KEY, key);
  try {
    account = await api("/v1/account");
  } catch (e) {
    sessionStorage.removeItem(KEY);
    account = null;
    throw e;
  }
}

function signOut() {
  sessionStorage.removeItem(KEY);
  account = null;
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

// ---- text to speech --------------------------------------------------------

// The voice picker: the first hundred voices, and the one last chosen on
// the voices page (selected).
async function loadVoiceChoices() {
  const select = $("tts-voice");
  const label = (v) => `${v.name} (${v.language}, ${v.engine})`;
  if (!select.options.length) {
    const page = await api("/v1/voices?limit=100");
    for (const v of page.data) select.add(new Option(label(v), v.id));
  }
  if (chosen) {
    if (![...select.options].some((o) => o.value === chosen.id)) select.add(new Option(label(chosen), chosen.id));
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
      $("tts-estimate").textContent = `Costs ${price.estimatedCredits} credits (you have ${price.availableCredits}).`;
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

$("tts-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const submit = e.submitter || $("tts-form").querySelector("button");
  submit.disabled = true;
  say("Speaking…");
  try {
    const job = await finished(await api("/v1/text-to-speech", { method: "POST", body: ttsBody(false) }));
    if (job.status !== "completed") throw new Error(job.error?.message || `The job ${job.status}.`);
    const r = job.result;
    $("tts-audio").src = r.audioUrl;
    $("tts-meta").textContent = `${r.duration.toFixed(2)} s, ${r.format} at ${r.sampleRate} Hz, ${job.credits} credits`;
    showWords(r.words);
    $("tts-result").hidden = false;
    say("Done.");
  } catch (err) {
    say(err.message, true);
  } finally {
    submit.disabled = false;
  }
});

// ---- jobs ------------------------------------------------------------------

async function loadJobs() {
  const page = await api("/v1/jobs?limit=20");
  const body = $("job-table").tBodies[0];
  body.replaceChildren();
  for (const j of page.data) {
    const row = body.insertRow();
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
    const url = j.result?.audioUrl || j.result?.videoUrl || j.result?.imageUrl;
    if (url) {
      const a = document.createElement("a");
      a.href = url;
      a.textContent = "Result";
      actions.append(a);
    }
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
    dd.textContent = v;
    $("credits").append(dt, dd);
  }
  const admin = atLeast("admin");
  $("key-form").hidden = !admin;
  $("key-table").hidden = !admin;
  $("keys-note").textContent = admin ? "" : "Listing and creating keys needs an admin key.";
  if (!admin) return;
  const keys = await api("/v1/keys");
  const body = $("key-table").tBodies[0];
  body.replaceChildren();
  for (const k of keys.data) {
    const row = body.insertRow();
    cell(row, k.name, "Name");
    cell(row, k.level, "Level");
    cell(row, k.prefix, "Starts with");
    cell(row, k.status, "Status");
    cell(row, when(k.createdAt), "Created");
    const actions = cell(row, "");
    if (k.status === "active" && k.id !== account.key.id) {
      actions.append(button(`Revoke ${k.name}`, async () => {
        if (!confirm(`Revoke the key “${k.name}” now?`)) return;
        try { await api(`/v1/keys/${encodeURIComponent(k.id)}`, { method: "DELETE" }); say(`Revoked ${k.name}.`); await loadAccount(); }
        catch (err) { say(err.message, true); }
      }));
    }
  }
}

$("key-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  try {
    const made = await api("/v1/keys", { method: "POST", body: { name: $("key-name").value, level: $("key-level").value } });
    $("new-key-value").textContent = made.key;
    $("new-key").hidden = false;
    $("key-name").value = "";
    say(`Created ${made.name}.`);
    await loadAccount();
  } catch (err) {
    say(err.message, true);
  }
});

// ---- pages -----------------------------------------------------------------

async function route() {
  clearInterval(jobTimer);
  const signedIn = Boolean(account);
  $("sign-in").hidden = signedIn;
  $("nav").hidden = !signedIn;
  $("who").hidden = !signedIn;
  let page = location.hash.slice(1);
  if (!pages.includes(page)) page = "voices";
  for (const p of pages) $(p).hidden = !signedIn || p !== page;
  for (const a of $("nav").querySelectorAll("a")) {
    if (a.getAttribute("href") === `#${page}`) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  if (!signedIn) { $("key").focus(); return; }
  $("who-level").textContent = `${account.name || account.id} · ${account.key.level} key`;
  try {
    if (page === "voices") await loadVoices();
    if (page === "speech") {
      await loadVoiceChoices();
      const canSpeak = atLeast("write");
      $("tts-form").querySelector("button[type=submit]").disabled = !canSpeak;
      if (!canSpeak) say("Speaking needs a write key; this one can only read.");
    }
    if (page === "jobs") {
      await loadJobs();
      jobTimer = setInterval(() => loadJobs().catch((err) => say(err.message, true)), 2000);
    }
    if (page === "account") await loadAccount();
  } catch (err) {
    say(err.message, true);
  }
}

window.addEventListener("hashchange", () => { say(""); route(); });

(async () => {
  if (sessionStorage.getItem(KEY)) {
    try { account = await api("/v1/account"); } catch { sessionStorage.removeItem(KEY); }
  }
  route();
})();
