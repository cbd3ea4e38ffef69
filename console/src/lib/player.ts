// One clip at a time: whatever starts playing (a preview, a result, a
// video) pauses every other clip on the page.

const previews = new Audio();
let previewOwner: ((playing: boolean) => void) | null = null;

document.addEventListener(
  "play",
  (e) => {
    for (const m of document.querySelectorAll<HTMLMediaElement>("audio, video")) if (m !== e.target) m.pause();
    if (e.target !== previews) stopPreview();
  },
  true,
);

previews.addEventListener("ended", () => stopPreview());
// A pause event arrives after the fact: one from stopping the last preview
// may land once the next is already playing, so the element's own state
// decides.
previews.addEventListener("pause", () => {
  if (previews.paused) previewOwner?.(false);
});

/** Plays `url` as the page's one preview; `owner` hears when it stops. */
export async function playPreview(url: string, owner: (playing: boolean) => void): Promise<void> {
  stopPreview();
  for (const m of document.querySelectorAll<HTMLMediaElement>("audio, video")) m.pause();
  previewOwner = owner;
  previews.src = url;
  owner(true);
  try {
    await previews.play();
  } catch (e) {
    if (previewOwner === owner) stopPreview();
    throw e;
  }
}

export function stopPreview(): void {
  const owner = previewOwner;
  previewOwner = null;
  previews.pause();
  previews.removeAttribute("src");
  owner?.(false);
}
