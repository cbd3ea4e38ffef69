// A file a page works on: shown at once (an address of the browser's own)
// and sent once to the account's files (`POST /v1/files`), so that the
// page can price and start work that names it without sending it again.

import { api, isAbort } from "./api";
import { problem } from "./words";

export class Upload {
  /** The file's id once the server has it. */
  id = $state<string | null>(null);
  busy = $state(false);
  error = $state("");
  /** A `blob:` address to play or show the file from. */
  url = $state("");

  constructor(private readonly labels: Record<string, string> = {}) {}

  /** Takes `file` (null: none); returns the cleanup, for the `$effect`
   * that follows the chosen file to return. */
  take(file: File | null): (() => void) | undefined {
    this.id = null;
    this.error = "";
    this.url = "";
    this.busy = false;
    if (!file) return;
    const url = URL.createObjectURL(file);
    this.url = url;
    this.busy = true;
    const ctl = new AbortController();
    const form = new FormData();
    form.set("file", file);
    api<{ id: string }>("/v1/files", { method: "POST", form, signal: ctl.signal })
      .then((r) => (this.id = r.id))
      .catch((e) => {
        if (!isAbort(e)) this.error = problem(e, this.labels);
      })
      .finally(() => {
        if (!ctl.signal.aborted) this.busy = false;
      });
    return () => {
      ctl.abort();
      URL.revokeObjectURL(url);
    };
  }
}
