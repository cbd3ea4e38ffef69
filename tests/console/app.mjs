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
    "--no-first-run", "--disable-background-networking", "--disable-component-update"],
});
const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
const page = await context.newPage();
const foreign = [];
const errors = [];
page.on("request", (r) => {
  const url = r.url();
  if (!url.startsWith("data:") && !url.startsWith("blob:") && new URL(url).origin !== origin) foreign.push(url);
});
page.on("pageerror", (e) => errors.push(String(e)));
page.on("console", (m) => {
  // A request the page itself cancelled (sign-out, a new dry run) is not an error.
  if (m.type() === "error" && !/net::ERR_ABORTED/.test(m.text())) errors.push(m.text());
});

async function axe(name) {
  await page.evaluate(axeSource);
  const found = await page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ["violations"] });
    return r.violations.filter((v) => v.impact === "serious" || v.impact === "critical")
      .map((v) => `${v.id} (${v.impact}): ${v.nodes.slice(0, 4).map((n) => n.target.join(" ")).join(", ")}`);
  });
  check(found.length === 0, `${name}: no serious accessibility violation${found.length ? ` — ${found.join("; ")}` : ""}`);
}

const shot = (name) => page.screenshot({ path: `${shots}/app-${name}.png`, fullPage: true });
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
  check(Date.now() - started < 3000, `the sign-in page paints in ${Date.now() - started} ms`);
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
  await axe("speech to text");
  await shot("transcribe");

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
  await drawer.getByRole("link", { name: "Voices" }).focus();
  await page.keyboard.press("Enter");
  await page.getByRole("heading", { level: 1, name: "Voices" }).waitFor();
  check(!(await drawer.isVisible()), "the menu opens and follows a link from the keyboard, then closes");
  for (const name of ["Voices", "Text to speech", "Voice changer", "Speech to text", "Jobs", "Account"]) {
    await page.getByRole("button", { name: "Open the menu" }).click();
    await page.getByRole("dialog").getByRole("link", { name, exact: true }).click();
    await page.getByRole("heading", { level: 1, name }).waitFor();
    await axe(`${name} at 375 px`);
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

  check(errors.length === 0, `no error in the browser console${errors.length ? `: ${errors.join(" | ")}` : ""}`);
  check(foreign.length === 0, `no request to anything but the server${foreign.length ? `: ${foreign.join(", ")}` : ""}`);
} catch (e) {
  await shot("failure").catch(() => {});
  console.error(`app: ${e.message}`);
  process.exitCode = 1;
} finally {
  await browser.close();
}
