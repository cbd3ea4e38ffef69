// A page's request that starts a job, as the page shows it: whether it is
// under way, the job as it moves, and what went wrong in words. A new
// start (or `stop`, or the page going away) abandons the last one, whose
// answers then land nowhere.

import { ApiError, isAbort, type RequestOptions } from "./api";
import { outcome, start } from "./jobs";
import { problem } from "./words";
import type { Job } from "./types";

export class Run {
  busy = $state(false);
  error = $state("");
  job = $state<Job | null>(null);
  #ctl: AbortController | null = null;

  /** `labels` names the form's fields for the refusals (`problem`). */
  constructor(private readonly labels: Record<string, string> = {}) {}

  /** Sends `POST path` and follows its job to its end (null: not sent, or
   * stopped). A refusal `own` takes (returns true for) is the page's to
   * show; any other is said in `error`. */
  async start(path: string, opts: RequestOptions, own?: (e: ApiError) => boolean): Promise<Job | null> {
    this.stop();
    const ctl = new AbortController();
    this.#ctl = ctl;
    this.error = "";
    this.job = null;
    this.busy = true;
    try {
      return await start(path, opts, (j) => (this.job = j), ctl.signal);
    } catch (e) {
      if (!isAbort(e) && !(e instanceof ApiError && own?.(e))) this.error = problem(e, this.labels);
      return null;
    } finally {
      if (this.#ctl === ctl) this.busy = false;
    }
  }

  stop(): void {
    this.#ctl?.abort();
    this.busy = false;
  }

  /** Forgets the last job and its messages. */
  clear(): void {
    this.job = null;
    this.error = "";
  }

  /** How the last job ended when it did not complete, in words. */
  get ending(): { tone: "error" | "info"; text: string } | null {
    return this.job ? outcome(this.job) : null;
  }

  /** The last job's result once it completed. */
  result<T>(): T | null {
    return this.job?.status === "completed" ? (this.job.result as T) : null;
  }
}
