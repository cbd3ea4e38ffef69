// What a request would cost, asked of the server (`dryRun: true`) a moment
// after the person stops changing it.

import { api, isAbort } from "./api";

/** Prices `body` at `path` after `delay` ms; `set` hears the credits (null
 * while asking or when it cannot be priced), `refused` a refusal. Returns
 * the cancel, for an `$effect` to return. */
export function price(path: string, body: object, set: (credits: number | null) => void, refused?: (e: unknown) => void, delay = 300): () => void {
  set(null);
  const ctl = new AbortController();
  const t = setTimeout(async () => {
    try {
      set((await api<{ estimatedCredits: number }>(path, { method: "POST", body: { ...body, dryRun: true }, signal: ctl.signal })).estimatedCredits);
    } catch (e) {
      if (!isAbort(e)) refused?.(e);
    }
  }, delay);
  return () => {
    clearTimeout(t);
    ctl.abort();
  };
}
