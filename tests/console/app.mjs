// End-to-end flows of the web app at /app (console/, docs/console.md) in
// headless Chromium driven by playwright-core, against a running server:
// node app.mjs BASE_URL ADMIN_KEY SCREENSHOT_DIR MEDIA_DIR
// (scripts/console-test.sh starts the server, makes the media and runs this
// after e2e.mjs). Each flow checks what a
// person would see. Every request must go to BASE_URL's origin, the
// browser console must stay free of errors (a Content-Security-Policy
// refusal is one), axe-core must find no serious or critical violation on
// any page at 1280 and 375 px, and signing out and in as another account
// must leave no trace of the first. Exits non-zero on the first failure.
import { mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { chromium } from "playwright-core";

const [base, adminKey, shots, media] = process.argv.slice(2);
if (!base || !adminKey || !shots || !media) {
  console.error("usage: node app.mjs BASE_URL ADMIN_KEY SCREENSHOT_DIR MEDIA_DIR");
  process.exit(2);
}
mkdirSync(shots, { recursive: true });
const origin = new URL(base).origin;
const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

function check(cond, what) {
  console.log(`${cond ? "ok  " : "FAIL"} app: ${what}`);
  if (!cond) throw new Error(what);
}

// The API, as the test's own client (to set up a second account and a job
// to cancel).
async function call(key, path, body, method = body ? "POST" : "GET") {
  const res = await fetch(base + path, {
    method,
    headers: { Authorization: `Bearer ${key}`, ...(body ? { "Content-Type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const data = await res.json();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(data)}`);
  return data;
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--autoplay-policy=no-user-gesture-required",
    "--no-first-run", "--disable-background-networking", "--disable-component-update",
    // A microphone that says a sentence over and over, allowed without
    // asking (the recorder, live transcription).
    "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
    `--use-file-for-fake-audio-capture=${media}/speech.wav`],
});
const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
const page = await context.newPage();
const foreign = [];
const errors = [];
page.on("request", (r) => {
  const url = r.url();
  if (!url.startsWith("data:") && !url.startsWith("blob:") && new URL(url).origin !== origin) foreign.push(url);
});
page.on("pageerror", (e) => errors.push({ text: String(e), url: "" }));
page.on("console", (m) => {
  // A request the page itself cancelled (sign-out, a new dry run) is not an
  // error, nor a preview a fresh server is still making (503: the page says
  // "still being made", which the preview check reads).
  const making = /\/previews\//.test(m.location().url ?? "") && /status of 503/.test(m.text());
  if (m.type() !== "error" || /net::ERR_ABORTED/.test(m.text()) || making) return;
  const e = { text: m.text(), url: m.location().url ?? "" };
  const expected = awaited.findIndex((a) => refuses(e, a));
  if (expected >= 0) awaited.splice(expected, 1);
  else errors.push(e);
});
// A refusal the flow asked for (a wrong key, a prompt no generator makes):
// the browser logs its status, which is not an error of the page. The log
// may come before the page shows the refusal or after it: one logged
// already is taken off the errors, one still to come is awaited and not
// counted when it comes.
const awaited = [];
const refuses = (e, { path, status }) =>
  e.url && new URL(e.url).pathname === path && e.text.includes(`status of ${status}`);
function asked(path, status) {
  const logged = errors.findIndex((e) => refuses(e, { path, status }));
  if (logged >= 0) errors.splice(logged, 1);
  else awaited.push({ path, status });
}

async function axe(name) {
  await page.evaluate(axeSource);
  const found = await page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ["violations"] });
    return r.violations.filter((v) => v.impact === "serious" || v.impact === "critical")
      .map((v) => `${v.id} (${v.impact}): ${v.nodes.slice(0, 4).map((n) => n.target.join(" ")).join(", ")}`);
  });
  check(found.length === 0, `${name}: no serious accessibility violation${found.length ? ` — ${found.join("; ")}` : ""}`);
}

const shot = (name) => page.screenshot({ path: `${shots}/app-${name}.jpg`, type: "jpeg", quality: 80 });
const main = page.locator("main");

async function go(name) {
  await page.getByRole("navigation", { name: "Pages" }).getByRole("link", { name, exact: true }).click();
  await page.getByRole("heading", { level: 1, name }).waitFor();
}

async function signIn(key) {
  await page.getByLabel("API key").fill(key);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("navigation", { name: "Pages" }).waitFor();
}

try {
  // Sign in: a wrong key is told in words; the right one opens the app.
  const started = Date.now();
  await page.goto(`${base}/app/`);
  await page.getByRole("heading", { name: "Sign in" }).waitFor();
  const painted = Date.now() - started;
  const fcp = await page.evaluate(() => performance.getEntriesByName("first-contentful-paint")[0]?.startTime ?? Infinity);
  check(fcp < 1000, `the sign-in page's first paint comes after ${fcp.toFixed(0)} ms (its form after ${painted} ms)`);
  const favicon = await fetch(`${base}/app/favicon.svg`);
  check(favicon.ok && favicon.headers.get("content-type") === "image/svg+xml", "the favicon is served");
  await axe("sign-in");
  await shot("sign-in");
  await page.getByLabel("API key").fill("mg_live_not_a_key");
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("alert").filter({ hasText: "not valid" }).waitFor();
  check(true, "a wrong key is refused in words");
  // (The browser logs that refusal's 401 itself: expected, so not counted.)
  errors.length = 0;
  await signIn(adminKey);
  await page.getByRole("heading", { level: 1, name: "Text to speech" }).waitFor();
  check(true, "signing in opens text to speech");
  const stored = await page.evaluate(() => ({ session: Object.values(sessionStorage), local: Object.values(localStorage) }));
  check(stored.session.includes(adminKey) && !stored.local.some((v) => v.includes("mg_live_")), "the key is kept for the tab only (session storage, never local storage)");
  await page.keyboard.press("Tab");
  check(await page.evaluate(() => document.activeElement?.textContent) === "Skip to the page", "the first Tab reaches the skip link");
  await page.keyboard.press("Enter");
  check(await page.evaluate(() => document.activeElement?.id) === "content", "…which moves the focus to the page");

  // Voices: search picks out Bella; one preview plays at a time; Use
  // opens text to speech with the voice picked.
  await go("Voices");
  await main.locator("li").first().waitFor();
  await page.getByLabel("Search").fill("bella");
  const cards = main.locator("ul > li");
  await page.waitForFunction(() => {
    const names = [...document.querySelectorAll("main ul > li h3")].map((h) => h.textContent);
    return names.length > 0 && names.length < 5 && names.every((n) => /bella/i.test(n));
  });
  check((await cards.locator("h3").allTextContents()).includes("Bella"), "searching “bella” shows Bella (and only names with “bella”)");
  // A preview plays, or says it is still being made (a fresh server makes
  // them in the background after its start): never a silent failure.
  await page.getByLabel("Search").fill("armenian");
  await page.waitForFunction(() => document.querySelectorAll("main ul > li").length === 2);
  await cards.nth(0).getByRole("button", { name: /the preview of/ }).click();
  await page.waitForFunction(
    () => document.querySelector('main [aria-pressed="true"]') || /still being made/.test(document.querySelector("main ul > li").textContent),
    null, { timeout: 60000 },
  );
  check(true, "a preview plays or says it is still being made");
  await axe("voices");
  await shot("voices");
  await page.getByLabel("Search").fill("bella");
  await page.getByRole("button", { name: "Use Bella for text to speech" }).click();
  await page.getByRole("heading", { level: 1, name: "Text to speech" }).waitFor();
  const picked = await page.locator("#tts-voice").inputValue();
  check(picked.startsWith("Bella"), `Use puts Bella in the voice picker (${picked})`);

  // Text to speech: the price before sending, a result that plays.
  const generate = page.getByRole("button", { name: "Generate speech" });
  check(await generate.isDisabled(), "Generate is off while there is no text");
  check((await page.locator("#tts-why").textContent()).includes("Type something"), "…and says why");
  await page.getByLabel("Text").fill("Hello from the new console. It speaks what you type.");
  await page.getByText(/^Costs \d+ credits?$/).waitFor();
  check(true, "the price shows before sending");
  await generate.click();
  await page.getByRole("heading", { name: "Result" }).waitFor({ timeout: 120000 });
  const duration = await page.locator("audio").evaluate((a) => new Promise((ok) => {
    if (a.readyState >= 1) ok(a.duration);
    else a.addEventListener("loadedmetadata", () => ok(a.duration), { once: true });
  }));
  check(duration > 1, `the result plays ${duration.toFixed(2)} s of speech`);
  await axe("text to speech");
  await shot("speech");
  // Streamed: it plays from the first sentence; the whole clip is kept.
  await page.getByLabel("Play while it is made").check();
  await generate.click();
  await main.getByText(/^First sound after [\d.]+ s, all of it after [\d.]+ s$/).waitFor({ timeout: 120000 });
  const [firstAt, allAt] = (await main.getByText(/^First sound after/).textContent()).match(/[\d.]+/g).map(Number);
  check(firstAt <= allAt, `streamed speech starts before it ends (${firstAt} s, ${allAt} s)`);
  const streamedLength = await main.locator("audio").first().evaluate((a) => new Promise((ok) => {
    if (a.readyState >= 1) ok(a.duration);
    else a.addEventListener("loadedmetadata", () => ok(a.duration), { once: true });
  }));
  check(Math.abs(streamedLength - duration) < 0.6, `the streamed clip is as long as the spoken one (${streamedLength.toFixed(2)} s)`);
  await page.getByLabel("Play while it is made").uncheck();
  // The page's history reopens a past job's result into the page.
  await main.getByRole("button", { name: /^Hello from the new console/ }).first().click();
  await main.getByRole("button", { name: "Play the speech" }).waitFor();
  check(await main.getByRole("button", { name: /^Hello from the new console/, pressed: true }).count() >= 1, "a past speech job reopens from the page's history");

  // Voice picker: typing filters; only picking changes the voice.
  await page.locator("#tts-voice").fill("");
  await page.locator("#tts-voice").pressSequentially("adam");
  await page.getByRole("option", { name: /^Adam/ }).first().click();
  check((await page.locator("#tts-voice").inputValue()).startsWith("Adam"), "picking Adam in the picker picks Adam");

  // Speech to text: a recording in, lines that follow playback, subtitles
  // out with the speaker names as set.
  await go("Speech to text");
  check(await page.getByRole("button", { name: "Transcribe" }).isDisabled(), "Transcribe is off until a file is chosen");
  await page.locator("#stt-file").setInputFiles(`${media}/speech.wav`);
  await page.getByText("speech.wav").waitFor();
  await page.getByRole("button", { name: "Transcribe" }).click();
  await page.getByRole("heading", { name: "Transcript" }).waitFor({ timeout: 120000 });
  const lines = await main.locator("ol li").allTextContents();
  check(/lazy dog/i.test(lines.join(" ")) && /forest/i.test(lines.join(" ")), `the transcript has the sentences (${lines.join(" / ")})`);
  const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("link", { name: "SRT" }).click()]);
  const subtitles = readFileSync(await download.path(), "utf8");
  check(/00:00:00,000 --> 00:00:0\d,\d{3}/.test(subtitles) && /forest/i.test(subtitles), "the SRT download holds timed lines");
  await main.getByRole("button", { name: /^Play from/ }).first().click();
  await page.waitForFunction(() => document.querySelector("main ol li.now"), null, { timeout: 10000 });
  check(true, "playing lights the line being spoken");
  // A real call, speakers told apart: a line spoken over says who else talks.
  await page.locator("#stt-file").setInputFiles(`${media}/call.wav`);
  await page.getByText("call.wav").waitFor();
  await page.getByLabel("Tell the speakers apart").check();
  await page.getByRole("button", { name: "Transcribe" }).click();
  await main.getByText("talking at the same time").first().waitFor({ timeout: 120000 });
  const spokenOver = await main.locator("ol li").filter({ hasText: "talking at the same time" }).first().textContent();
  check(/Speaker [12]:[\s\S]*Speaker [12] talking at the same time/.test(spokenOver), `a line spoken over names the other speaker (${spokenOver.trim()})`);
  await axe("speech to text");
  await shot("transcribe");

  // Live transcription: the microphone says a sentence; its words appear
  // as they are understood, and Stop ends the session.
  await go("Live transcription");
  await page.getByRole("button", { name: "Start listening" }).click();
  await main.locator("ol li").filter({ hasText: /brown fox/i }).first().waitFor({ timeout: 150000 });
  const live = await main.locator("ol li").allTextContents();
  check(/quick brown fox/i.test(live.join(" ")), `live words appear as they are said (${live.join(" / ").slice(0, 100)})`);
  await axe("live transcription");
  await shot("live");
  await page.getByRole("button", { name: "Stop" }).click();
  await page.getByRole("button", { name: "Start listening" }).waitFor({ timeout: 30000 });
  check(true, "Stop ends the live session");

  // Type and hear: each sentence is spoken once its full stop is typed.
  await go("Type and hear");
  await page.locator("#hear-text").pressSequentially("Hello there. This sentence is typed and then heard. ", { delay: 30 });
  await main.locator(".pieces li").nth(1).waitFor({ timeout: 30000 });
  const pieces = await main.locator(".pieces li").allTextContents();
  check(/^Hello there\./.test(pieces[0]) && /ms after it was typed/.test(pieces.join(" ")), `each sentence is heard as it is finished (${pieces.join(" / ")})`);
  await axe("type and hear");
  await shot("type-and-hear");
  await page.getByRole("button", { name: "Start over" }).click();

  // Voice changer: a recording in another voice, beside the original.
  await go("Voice changer");
  await page.locator("#vc-file").setInputFiles(`${media}/speech.wav`);
  await page.getByRole("heading", { name: "Original" }).waitFor();
  await page.getByRole("button", { name: "Change the voice" }).click();
  await page.getByRole("heading", { name: "In the new voice" }).waitFor({ timeout: 180000 });
  const changed = await main.locator("audio").nth(1).evaluate((a) => new Promise((ok) => {
    if (a.readyState >= 1) ok(a.duration);
    else a.addEventListener("loadedmetadata", () => ok(a.duration), { once: true });
  }));
  check(changed > 4, `the changed recording plays ${changed.toFixed(2)} s, as long as the original`);
  await page.getByRole("button", { name: "Play the original recording" }).click();
  await page.waitForFunction(() => !document.querySelectorAll("main audio")[0].paused);
  await page.getByRole("button", { name: "Play the changed recording" }).click();
  await page.waitForFunction(() => {
    const [original, changed] = document.querySelectorAll("main audio");
    return original.paused && !changed.paused;
  });
  check(true, "starting one clip pauses the other (one clip at a time)");
  await axe("voice changer");
  await shot("voice-changer");

  // Your voices: samples listed with their lengths before cloning (a file
  // and a recording), a clone made, renamed and deleted.
  await go("Your voices");
  await main.getByText("No voice of your own yet.").waitFor();
  await page.getByLabel("Name").fill("Anna");
  await page.locator("#clone-files").setInputFiles(`${media}/sample.wav`);
  await main.locator(".samples li").first().getByText(/·\s*[\d.]+ s$/).waitFor();
  const sampleLength = Number((await main.locator(".samples li").first().textContent()).match(/([\d.]+) s/)[1]);
  check(sampleLength > 10, `a chosen sample shows its length (${sampleLength} s)`);
  await page.getByRole("button", { name: "Record with the microphone" }).click();
  await page.waitForTimeout(2200);
  await page.getByRole("button", { name: /^Stop recording/ }).click();
  await main.locator(".samples li").nth(1).getByText(/·\s*[\d.]+ s$/).waitFor();
  const recorded = Number((await main.locator(".samples li").nth(1).textContent()).match(/([\d.]+) s/)[1]);
  check(recorded > 1.5 && recorded < 4, `a recording joins the samples with its length (${recorded} s)`);
  await page.getByRole("button", { name: "Remove sample 2" }).click();
  check(await main.locator(".samples li").count() === 1, "a sample can be taken out before cloning");
  check((await page.locator("#clone-why").textContent()).includes("agreed"), "cloning waits for the speaker's consent, and says so");
  await page.locator("#clone-way").click();
  await page.getByRole("option", { name: /Converted stock voice/ }).click();
  await page.getByLabel("The speaker agreed to having their voice cloned").check();
  await axe("your voices");
  await page.getByRole("button", { name: "Clone the voice" }).click();
  await main.getByRole("heading", { level: 3, name: "Anna" }).waitFor({ timeout: 180000 });
  check(/Sounds .* the speaker \(0\.\d\d/.test(await main.locator("li.card").first().textContent()), "the clone's likeness is said in words");
  await page.getByRole("button", { name: "Rename Anna" }).click();
  await page.getByLabel("New name for Anna").fill("Anna B");
  await page.getByRole("button", { name: "Save" }).click();
  await main.getByRole("heading", { level: 3, name: "Anna B" }).waitFor();
  check(true, "a clone can be renamed");
  await shot("your-voices");
  page.once("dialog", (d) => d.accept());
  await page.getByRole("button", { name: "Delete Anna B" }).click();
  await main.getByText("No voice of your own yet.").waitFor();

  // Design a voice: words nobody reads list the vocabulary; a description
  // makes three voices to play, and one is kept as the account's.
  await go("Design a voice");
  await page.getByLabel("Description").fill("qwzx florp");
  await page.getByRole("button", { name: "Design three voices" }).click();
  await page.getByRole("heading", { name: "What the designer understands" }).waitFor();
  check(await main.locator("ul.words li").count() > 20, "a description the designer cannot read lists the words it knows");
  asked("/v1/voices/design", 422);
  await page.getByRole("button", { name: "a calm older man with a deep British voice, speaking slowly" }).click();
  await page.getByRole("button", { name: "Design three voices" }).click();
  await main.getByRole("heading", { level: 3, name: "Voice 3" }).waitFor({ timeout: 240000 });
  check(await main.locator("li.card audio, li.card button[aria-label^='Play']").count() >= 3, "three designed voices each have a player");
  check((await main.textContent()).includes("British English"), "the reading of the description is said in words");
  await page.getByLabel("Name").nth(1).fill("Designed Bob");
  await page.getByRole("button", { name: "Keep voice 2" }).click();
  await main.getByText("Kept as Designed Bob.").waitFor();
  check(true, "a designed voice can be kept");
  await axe("design a voice");
  await shot("design-voice");
  await go("Your voices");
  await main.getByRole("heading", { level: 3, name: "Designed Bob" }).waitFor();
  check(true, "a kept design is one of the account's voices");
  page.once("dialog", (d) => d.accept());
  await page.getByRole("button", { name: "Delete Designed Bob" }).click();
  await main.getByText("No voice of your own yet.").waitFor();
  check(true, "a clone can be deleted");

  // Trim: a range dragged on the timeline is kept when the mouse lets go,
  // its end moves from the keyboard, and the trimmed video is as long as
  // the range.
  await go("Trim video");
  await page.locator("#trim-file").setInputFiles(`${media}/clip.mp4`);
  const strip = main.locator(".strip");
  await strip.waitFor();
  const box = await strip.boundingBox();
  await page.mouse.move(box.x + box.width * 0.2, box.y + box.height / 2);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * 0.35, box.y + box.height / 2, { steps: 5 });
  await page.mouse.move(box.x + box.width * 0.5, box.y + box.height / 2, { steps: 5 });
  await page.mouse.up();
  const endHandle = page.getByRole("slider", { name: "End of range 1" });
  await endHandle.waitFor();
  check(await main.getByRole("button", { name: "Remove range 1" }).count() === 1, "the range dragged on the timeline is kept after letting go");
  const startAt = Number(await page.getByRole("slider", { name: "Start of range 1" }).getAttribute("aria-valuenow"));
  const endAt = Number(await endHandle.getAttribute("aria-valuenow"));
  check(Math.abs(startAt - 1.2) < 0.15 && Math.abs(endAt - 3) < 0.15, `the range runs where it was dragged (${startAt}–${endAt} s of 6 s)`);
  await endHandle.focus();
  for (let i = 0; i < 5; i++) await page.keyboard.press("ArrowRight");
  const moved = Number(await endHandle.getAttribute("aria-valuenow"));
  check(Math.abs(moved - endAt - 0.5) < 0.01, `the arrow keys move the range's end (${endAt} → ${moved} s)`);
  await main.getByText(/^Costs \d+ credits?$/).waitFor({ timeout: 30000 });
  check(true, "the trim's price is shown before it is sent");
  await axe("trim");
  await page.getByRole("button", { name: "Trim the video" }).click();
  await page.getByRole("heading", { name: "Trimmed" }).waitFor({ timeout: 120000 });
  const trimmed = await page.getByLabel("The trimmed video").evaluate((v) => new Promise((ok) => {
    if (v.readyState >= 1) ok(v.duration);
    else v.addEventListener("loadedmetadata", () => ok(v.duration), { once: true });
  }));
  check(Math.abs(trimmed - (moved - startAt)) < 0.3, `the trimmed video lasts the range (${trimmed.toFixed(2)} s for ${(moved - startAt).toFixed(2)} s)`);
  check(await main.getByRole("button", { name: "Remove range 1" }).count() === 1, "the range is still there after the trim");
  await shot("trim");

  // Sound and images: a sound and an image land in the gallery; a prompt
  // the generators cannot make says what they understand.
  await go("Sound and images");
  await main.getByText(/Nothing made yet|Sound ·|Image ·/).first().waitFor();
  await page.getByLabel("Prompt").fill("heavy rain with distant thunder");
  await page.getByLabel("Seconds").fill("2");
  await page.getByRole("button", { name: "Generate the sound" }).click();
  await main.locator("li.item").filter({ hasText: "heavy rain with distant thunder" }).getByRole("button", { name: /^Play the sound/ }).waitFor({ timeout: 120000 });
  check(true, "a generated sound lands in the gallery with its player");
  await page.getByLabel("Prompt").fill("qwzx florp");
  await page.getByRole("button", { name: "Generate the sound" }).click();
  await page.getByRole("heading", { name: "What the sound generator understands" }).waitFor();
  check(await main.locator("ul.words li").count() > 10, "a refused sound prompt lists the sources the generator knows");
  // The price asked a moment after typing (a dry run) may be refused as
  // well, before or after the click: up to two refusals each.
  asked("/v1/sound-generation", 422);
  asked("/v1/sound-generation", 422);
  await main.getByText("Image", { exact: true }).click();
  await page.getByLabel("Prompt").fill("qwzx florp");
  await page.getByRole("button", { name: "Generate the image" }).click();
  await page.getByRole("heading", { name: "What the image generator understands" }).waitFor();
  check((await main.textContent()).includes("a setting (beach"), "a refused image prompt says what the generator draws");
  asked("/v1/image-generation", 422);
  asked("/v1/image-generation", 422);
  await page.getByLabel("Prompt").fill("a cat next to a dog on the beach");
  await page.getByRole("button", { name: "Generate the image" }).click();
  const picture = main.getByRole("img", { name: /Made for “a cat next to a dog on the beach”/ });
  await picture.waitFor({ timeout: 120000 });
  await page.waitForFunction(() => [...document.querySelectorAll("main img")].some((i) => i.complete && i.naturalWidth > 0));
  check(await picture.evaluate((i) => i.naturalWidth) === 512, "a generated image shows in the gallery at its size");
  check(await main.getByRole("heading", { name: /understands/ }).count() === 0, "a new request clears the last one's refusal");
  await axe("sound and images");
  await shot("create");

  // Dubbing: the original and the dub side by side with their subtitles,
  // a line re-dubbed with new words, the first dub reopened as it was.
  await go("Dubbing");
  await page.locator("#dub-file").setInputFiles(`${media}/talk.mp4`);
  await main.getByText(/^Costs \d+ credits?$/).waitFor({ timeout: 30000 });
  check((await page.locator("#dub-target").textContent()).includes("Spanish"), "dubbing starts into Spanish");
  await page.getByRole("button", { name: "Dub it" }).click();
  await page.getByRole("heading", { name: "Dubbed · Spanish" }).waitFor({ timeout: 300000 });
  const line = page.getByLabel("Translation of line 1");
  const first = await line.inputValue();
  check(first.trim().length > 0, `the dub's first line reads “${first}”`);
  check(await main.locator("video track").count() === 2, "the original and the dub each carry their own subtitles");
  check(await main.getByRole("link", { name: "SRT" }).count() === 2 && await main.getByRole("link", { name: "VTT" }).count() === 2, "subtitles of both languages can be downloaded");
  await line.fill("Buenos días a todos.");
  await page.getByRole("button", { name: "Re-dub line 1" }).click();
  await main.getByText(/^Line 1 re-dubbed/).waitFor({ timeout: 300000 });
  check(await page.getByLabel("Translation of line 1").inputValue() === "Buenos días a todos.", "a re-dubbed line keeps its new words");
  await main.getByRole("button", { name: /Spanish.*\d+ s/ }).last().click();
  await page.waitForFunction((text) => document.querySelector("#dub-line-0")?.value === text, first);
  check(true, "a past dub reopens into the line editor as it was");
  await axe("dubbing");
  await shot("dubbing");

  // Avatars: filters narrow the library; an upload is renamed and deleted;
  // an avatar expands to the asked length with its seams said in words.
  await go("Avatars");
  const avatarCards = main.locator("li.card");
  await avatarCards.first().waitFor();
  const builtIn = await avatarCards.count();
  await page.locator("#av-shape").click();
  await page.getByRole("option", { name: "Portrait" }).click();
  await page.waitForFunction((n) => document.querySelectorAll("main li.card").length !== n || document.querySelector("main")?.textContent.includes("No avatar matches"), builtIn);
  check(true, "a filter narrows the avatars");
  await page.locator("#av-shape").click();
  await page.getByRole("option", { name: "Any shape" }).click();
  await page.waitForFunction((n) => document.querySelectorAll("main li.card").length === n, builtIn);
  await page.locator("#av-file").setInputFiles(`${media}/clip.mp4`);
  await page.getByLabel("Avatar name").fill("Test presenter");
  await page.getByRole("button", { name: "Upload", exact: true }).click();
  await main.getByRole("heading", { level: 3, name: "Test presenter" }).waitFor({ timeout: 120000 });
  await page.getByRole("button", { name: "Rename Test presenter" }).click();
  await page.getByLabel("New name for Test presenter").fill("Presenter B");
  await page.getByRole("button", { name: "Save" }).click();
  await main.getByRole("heading", { level: 3, name: "Presenter B" }).waitFor();
  check(true, "an uploaded avatar can be renamed");
  page.once("dialog", (d) => d.accept());
  await page.getByRole("button", { name: "Delete Presenter B" }).click();
  await main.getByText("Presenter B was deleted.").waitFor();
  check(await main.getByRole("heading", { level: 3, name: "Presenter B" }).count() === 0, "an uploaded avatar can be deleted");
  await avatarCards.first().getByRole("button", { name: /^Expand / }).click();
  await page.getByLabel("Seconds").fill("4");
  await main.getByText(/^Costs \d+ credits?$/).waitFor({ timeout: 30000 });
  await page.getByRole("button", { name: "Expand", exact: true }).click();
  await page.getByRole("heading", { name: "Expanded" }).waitFor({ timeout: 120000 });
  const expanded = await page.getByLabel("The expanded video").evaluate((v) => new Promise((ok) => {
    if (v.readyState >= 1) ok(v.duration);
    else v.addEventListener("loadedmetadata", () => ok(v.duration), { once: true });
  }));
  check(Math.abs(expanded - 4) < 0.2, `the expanded avatar lasts what was asked (${expanded.toFixed(2)} s of 4 s)`);
  check(/jumps? back to a matching frame/.test(await main.textContent()), "the seam report is said in words");
  await main.getByRole("button", { name: /, 4\.0 s/, pressed: true }).waitFor();
  check(true, "the expansion is listed among the recent ones, open");
  await axe("avatars");
  await shot("avatars");

  // Operator: an account made, credits granted with a note, a key made
  // for it (shown once, and it works).
  await go("Operator");
  await main.locator("#queue-empty, table.queue").first().waitFor();
  check(true, "the operator sees the queue by kind, read from the server's metrics");
  await page.getByLabel("Account name").fill("e2e third");
  await page.getByLabel("Credits to start with").fill("250");
  await page.getByRole("button", { name: "Make the account" }).click();
  await main.getByText(/^e2e third was made with 250 credits/).waitFor();
  await page.getByLabel("Credits to add").fill("50");
  await page.getByLabel("Note").fill("e2e top-up");
  await page.getByRole("button", { name: "Grant" }).click();
  await main.getByText("Added 50 credits; the balance is 300 credits.").waitFor();
  check(true, "the operator grants credits and is told the new balance");
  await page.getByRole("button", { name: "Make a key for e2e third" }).click();
  const thirdKey = await main.locator("code.secret-key").textContent();
  const third = await call(thirdKey, "/v1/account");
  check(third.name === "e2e third" && third.credits.balance === 300, "the key made for an account opens that account");
  await axe("operator");
  await shot("operator");

  // Jobs: the speech just made, done and charged; a cancelled job shows
  // as refunded.
  const long = "This sentence is read slowly and at length, so that there is time to cancel it. ".repeat(40);
  const voice = (await call(adminKey, "/v1/voices?q=heart")).data[0].id;
  const slow = await fetch(`${base}/v1/text-to-speech`, {
    method: "POST",
    headers: { Authorization: `Bearer ${adminKey}`, "Content-Type": "application/json", Prefer: "respond-async" },
    body: JSON.stringify({ text: long, voiceId: voice }),
  }).then((r) => r.json());
  await call(adminKey, `/v1/jobs/${slow.id}`, undefined, "DELETE");
  await go("Jobs");
  const rows = main.locator("li");
  await rows.first().waitFor();
  const tts = rows.filter({ hasText: "Hello from the new console" }).first();
  check(/Done/.test(await tts.textContent()) && /\d+ credits?/.test(await tts.textContent()), "the speech job is done and shows its price");
  const cancelled = rows.filter({ hasText: "Cancelled" }).first();
  check((await cancelled.textContent()).includes("refunded"), "a cancelled job shows as refunded, not its price");
  await tts.getByRole("button").first().click();
  await tts.locator("audio").waitFor();
  check(true, "opening a job shows its result");
  await axe("jobs");
  await shot("jobs");

  // Account: the ledger in words; a key made and revoked.
  await go("Account");
  await main.getByText(/^Held for Text to speech/).first().waitFor();
  check(await main.getByText(/^Credits added/).count() > 0, "the ledger says where credits came from");
  check(await main.getByText(/^Returned: /).count() > 0, "the ledger says what was returned");
  await page.getByLabel("Name").fill("e2e laptop");
  await page.getByRole("button", { name: "Create key" }).click();
  await main.getByText(/Copy it now/).waitFor();
  check(/^mg_live_/.test(await main.locator("code.secret").textContent()), "a new key is shown once");
  await page.getByRole("button", { name: "Revoke the key e2e laptop" }).click();
  await main.locator("li", { hasText: "e2e laptop" }).getByText("Revoked").waitFor();
  check(true, "a revoked key shows as revoked");
  check(/credits? charged in the last 14 days/.test(await main.locator("#usage-summary").textContent()), "usage by day has a summary in words");
  check(await main.locator("ul.kinds li", { hasText: "Text to speech" }).count() === 1, "usage by kind lists text to speech");
  await page.getByLabel("Address").fill("http://127.0.0.1:9/hook");
  await page.getByRole("button", { name: "Add endpoint" }).click();
  const hookRefusal = await main.getByRole("alert").filter({ hasText: /address/i }).textContent();
  check(!/`|url/.test(hookRefusal), `a refused webhook address is said in words (${hookRefusal})`);
  asked("/v1/webhooks", 422);
  await page.getByLabel("Address").fill("https://hooks.example.com/mediagen");
  await page.getByRole("button", { name: "Add endpoint" }).click();
  await main.getByText(/^Endpoint added/).waitFor();
  check(/^whsec_/.test(await main.locator(".created code.secret").last().textContent()), "a new webhook's signing secret is shown once");
  await page.getByRole("button", { name: "Deliveries to https://hooks.example.com/mediagen" }).click();
  await main.getByText("Nothing sent to it yet.").waitFor();
  await page.getByRole("button", { name: "Remove the endpoint https://hooks.example.com/mediagen" }).click();
  await page.waitForFunction(() => !document.querySelector("main").textContent.includes("Deliveries to"));
  check(true, "a webhook endpoint can be removed");
  await axe("account");
  await shot("account");

  // Phone width: the menu is behind a button, works from the keyboard,
  // and every page passes axe there too.
  await page.setViewportSize({ width: 375, height: 800 });
  check(!(await page.locator("aside").isVisible()), "at 375 px the sidebar is hidden");
  await page.getByRole("button", { name: "Open the menu" }).focus();
  await page.keyboard.press("Enter");
  const drawer = page.getByRole("dialog");
  await drawer.waitFor();
  await drawer.getByRole("link", { name: "Voices", exact: true }).focus();
  await page.keyboard.press("Enter");
  await page.getByRole("heading", { level: 1, name: "Voices" }).waitFor();
  check(!(await drawer.isVisible()), "the menu opens and follows a link from the keyboard, then closes");
  for (const name of ["Voices", "Your voices", "Design a voice", "Text to speech", "Type and hear", "Voice changer", "Speech to text", "Live transcription", "Dubbing", "Trim video", "Avatars", "Sound and images", "Jobs", "Account", "Operator"]) {
    await page.getByRole("button", { name: "Open the menu" }).click();
    await page.getByRole("dialog").getByRole("link", { name, exact: true }).click();
    await page.getByRole("heading", { level: 1, name }).waitFor();
    await axe(`${name} at 375 px`);
    const wide = await page.evaluate(() => document.documentElement.scrollWidth);
    check(wide <= 375, `${name} fits 375 px (${wide} px)`);
    await shot(`phone-${name.toLowerCase().replaceAll(" ", "-")}`);
  }
  await page.setViewportSize({ width: 1280, height: 800 });

  // Sign out, then in as another account: nothing of the first is left.
  await go("Text to speech");
  await page.getByLabel("Text").fill("A secret sentence of the first account.");
  const second = await call(adminKey, "/v1/accounts", { name: "e2e second", credits: 300 });
  const secondKey = (await call(adminKey, `/v1/accounts/${second.id}/keys`, { level: "write", name: "e2e" })).key;
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByRole("heading", { name: "Sign in" }).waitFor();
  check(await page.getByLabel("API key").inputValue() === "", "the sign-in form is empty after signing out");
  await signIn(secondKey);
  check(await page.getByLabel("Text").inputValue() === "", "the next account's text to speech starts empty");
  check(!(await page.locator("#tts-voice").inputValue()).startsWith("Adam"), "…without the last account's voice");
  await go("Jobs");
  await main.getByText("No jobs yet.").waitFor();
  check(true, "the next account sees no job of the first");
  await go("Account");
  await main.getByText(/^Credits added/).first().waitFor();
  check(await main.getByText(/Held for/).count() === 0, "…and no ledger entry of the first");
  check((await page.locator("header.topbar").textContent()).includes("300 credits"), "the balance is the new account's");
  check(!(await page.content()).includes("A secret sentence"), "no text of the first account is anywhere on the page");
  check(await main.getByText(/Keys are made and revoked with an admin key/).count() === 1, "a write key is told that keys need an admin key");
  check(await page.getByRole("navigation", { name: "Pages" }).getByRole("link", { name: "Operator" }).count() === 0, "a write key has no operator page");

  // A read-only key: said in the menu, and what it cannot do says why.
  const readKey = (await call(adminKey, `/v1/accounts/${second.id}/keys`, { level: "read", name: "e2e read" })).key;
  await page.getByRole("button", { name: "Sign out" }).click();
  await signIn(readKey);
  check(await page.getByText("Read-only key").first().isVisible(), "the menu says the key only reads");
  await go("Text to speech");
  await page.getByLabel("Text").fill("Read keys cannot speak.");
  check(await page.getByRole("button", { name: "Generate speech" }).isDisabled() && (await page.locator("#tts-why").textContent()).includes("only read"), "a read key cannot send, and is told why");

  check(errors.length === 0, `no error in the browser console${errors.length ? `: ${errors.map((e) => `${e.text} (${e.url})`).join(" | ")}` : ""}`);
  check(foreign.length === 0, `no request to anything but the server${foreign.length ? `: ${foreign.join(", ")}` : ""}`);
} catch (e) {
  await shot("failure").catch(() => {});
  console.error(`app: ${e.message}`);
  process.exitCode = 1;
} finally {
  await browser.close();
}
