// The console's pages: path, name in the menu, the group it sits in, who
// may open it, and the component. The menu, the router and the page
// titles all read this one list.
import type { Component } from "svelte";
import Voices from "./Voices.svelte";
import Speech from "./Speech.svelte";
import Transcribe from "./Transcribe.svelte";
import VoiceChanger from "./VoiceChanger.svelte";
import Jobs from "./Jobs.svelte";
import Account from "./Account.svelte";

export interface PageDef {
  path: string;
  name: string;
  group: "Voice" | "Transcripts" | "Manage";
  admin?: boolean;
  component: Component;
}

export const PAGES: PageDef[] = [
  { path: "/voices", name: "Voices", group: "Voice", component: Voices },
  { path: "/speech", name: "Text to speech", group: "Voice", component: Speech },
  { path: "/voice-changer", name: "Voice changer", group: "Voice", component: VoiceChanger },
  { path: "/transcribe", name: "Speech to text", group: "Transcripts", component: Transcribe },
  { path: "/jobs", name: "Jobs", group: "Manage", component: Jobs },
  { path: "/account", name: "Account", group: "Manage", component: Account },
];

export const HOME = "/speech";
