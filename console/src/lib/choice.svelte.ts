// What one page hands to another in this sign-in: the voice "Use" picked
// in the library for the speech page. Forgotten at sign-out.
import { onSignOut } from "./session.svelte";

export const choice = $state({ voiceId: "" });

onSignOut(() => {
  choice.voiceId = "";
});
