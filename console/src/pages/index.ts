// The console's pages: path, name in the menu, the group it sits in, who
// may open it, and the component, loaded when the page is first opened
// (each page is its own file of the bundle, so the sign-in paints without
// them). The menu, the router and the page titles all read this one list.
import type { Component } from "svelte";

export interface PageDef {
  path: string;
  name: string;
  group: "Voice" | "Transcripts" | "Video" | "Create" | "Manage";
  admin?: boolean;
  load: () => Promise<{ default: Component }>;
}

export const PAGES: PageDef[] = [
  { path: "/voices", name: "Voices", group: "Voice", load: () => import("./Voices.svelte") },
  { path: "/my-voices", name: "Your voices", group: "Voice", load: () => import("./MyVoices.svelte") },
  { path: "/design-voice", name: "Design a voice", group: "Voice", load: () => import("./DesignVoice.svelte") },
  { path: "/speech", name: "Text to speech", group: "Voice", load: () => import("./Speech.svelte") },
  { path: "/type-and-hear", name: "Type and hear", group: "Voice", load: () => import("./TypeAndHear.svelte") },
  { path: "/voice-changer", name: "Voice changer", group: "Voice", load: () => import("./VoiceChanger.svelte") },
  { path: "/transcribe", name: "Speech to text", group: "Transcripts", load: () => import("./Transcribe.svelte") },
  { path: "/live", name: "Live transcription", group: "Transcripts", load: () => import("./Live.svelte") },
  { path: "/dubbing", name: "Dubbing", group: "Video", load: () => import("./Dub.svelte") },
  { path: "/trim", name: "Trim video", group: "Video", load: () => import("./Trim.svelte") },
  { path: "/avatars", name: "Avatars", group: "Video", load: () => import("./Avatars.svelte") },
  { path: "/create", name: "Sound and images", group: "Create", load: () => import("./Create.svelte") },
  { path: "/jobs", name: "Jobs", group: "Manage", load: () => import("./Jobs.svelte") },
  { path: "/account", name: "Account", group: "Manage", load: () => import("./Account.svelte") },
  { path: "/operator", name: "Operator", group: "Manage", admin: true, load: () => import("./Operator.svelte") },
];

export const HOME = "/speech";
