// The account's voice list (catalog and own clones), read once per sign-in
// and kept until sign-out or a change to the account's own voices.

import { api, withQuery } from "./api";
import { onSignOut } from "./session.svelte";
import type { Page, Voice } from "./types";

let loading: Promise<Voice[]> | null = null;
export const voices = $state({ list: [] as Voice[], loaded: false });

onSignOut(() => {
  loading = null;
  voices.list = [];
  voices.loaded = false;
});

async function readAll(): Promise<Voice[]> {
  const all: Voice[] = [];
  for (let page = 1; ; page++) {
    const p = await api<Page<Voice>>(withQuery("/v1/voices", { limit: 100, page }));
    all.push(...p.data);
    if (!p.pagination.hasMore) return all;
  }
}

/** Every voice the account can use (read once, shared by every page). */
export function loadVoices(): Promise<Voice[]> {
  loading ??= readAll().then(
    (list) => {
      voices.list = list;
      voices.loaded = true;
      return list;
    },
    (e) => {
      loading = null;
      throw e;
    },
  );
  return loading;
}

/** Forgets the list (after a clone, a rename or a delete). */
export function reloadVoices(): Promise<Voice[]> {
  loading = null;
  return loadVoices();
}

const languageNames = new Intl.DisplayNames(["en"], { type: "language" });

/** "English (US)"-style name of a BCP 47 tag. */
export function languageName(tag: string): string {
  try {
    return languageNames.of(tag) ?? tag;
  } catch {
    return tag;
  }
}

export const engineName = (e: string): string => ({ kokoro: "Kokoro", piper: "Piper", espeak: "eSpeak" })[e] ?? e;

/** Whether a voice matches what a person typed (name, language, accent,
 * engine or the engine's own voice name). */
export function voiceMatches(v: Voice, needle: string): boolean {
  const n = needle.trim().toLowerCase();
  if (!n) return true;
  return [v.name, v.engineVoice ?? "", v.accent ?? "", languageName(v.language), v.language, engineName(v.engine), v.gender]
    .some((s) => s.toLowerCase().includes(n));
}

/** The voice a page starts with when none was picked: Kokoro's Heart. */
export const defaultVoice = (list: Voice[]): string => (list.find((v) => v.engineVoice === "af_heart") ?? list[0])?.id ?? "";

/** The languages the recogniser takes, as a select's items, "Detect the
 * language" first (one request, kept for the sign-in like the voices). */
let recognised: Promise<{ value: string; label: string }[]> | null = null;
onSignOut(() => (recognised = null));
export function recognisedLanguages(): Promise<{ value: string; label: string }[]> {
  recognised ??= api<{ languages: { code: string }[] }>("/v1/speech-to-text/languages").then((r) => [
    { value: "auto", label: "Detect the language" },
    ...r.languages.map((l) => ({ value: l.code, label: languageName(l.code) })).sort((a, b) => a.label.localeCompare(b.label)),
  ]);
  recognised.catch(() => (recognised = null));
  return recognised;
}
