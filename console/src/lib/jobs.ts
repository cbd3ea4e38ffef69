// Jobs as the pages start and follow them: a request answers with a job
// (done, or queued when the work outlasts the server's wait), and
// `follow` reads it until it ends, stopping when the page goes away.

import { api, type RequestOptions } from "./api";
import { refreshAccount } from "./session.svelte";
import type { Job } from "./types";

const ENDED = new Set(["completed", "failed", "cancelled"]);

export const ended = (job: Job): boolean => ENDED.has(job.status);

/** Reads `job` every second until it ends; `onUpdate` hears each state. */
export async function follow(job: Job, onUpdate: (j: Job) => void, signal?: AbortSignal): Promise<Job> {
  let current = job;
  onUpdate(current);
  while (!ended(current)) {
    await new Promise((r) => setTimeout(r, 1000));
    if (signal?.aborted) throw new DOMException("stopped", "AbortError");
    current = await api<Job>(`/v1/jobs/${encodeURIComponent(current.id)}`, { signal });
    onUpdate(current);
  }
  return current;
}

export async function cancel(job: Job): Promise<Job> {
  return api<Job>(`/v1/jobs/${encodeURIComponent(job.id)}`, { method: "DELETE" });
}

/** What a job that did not complete says, in words (a person's own cancel
 * is not an error). */
export function outcome(job: Job): { tone: "error" | "info"; text: string } | null {
  if (job.status === "cancelled") return { tone: "info", text: "Cancelled. Nothing was charged." };
  if (job.status === "failed") return { tone: "error", text: `${job.error?.message ?? "The job failed."} Nothing was charged.` };
  return null;
}

/** Sends `POST path` (which answers with a job), follows the job to its
 * end and reads the balance again. */
export async function start(path: string, opts: RequestOptions, onUpdate: (j: Job) => void, signal: AbortSignal): Promise<Job> {
  const first = await api<Job>(path, { ...opts, method: "POST", signal });
  const last = await follow(first, onUpdate, signal);
  await refreshAccount();
  return last;
}
