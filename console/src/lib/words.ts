// The console's words for what the API names in code: job kinds and
// states, counts with their plural, times, and refusals told as a person
// would tell them.

import { ApiError, isAbort } from "./api";
import type { Job } from "./types";

const KINDS: Record<string, string> = {
  tts: "Text to speech",
  stt: "Speech to text",
  "voice.change": "Voice changer",
  "voice.clone": "Voice clone",
  dubbing: "Dubbing",
  "dubbing.edit": "Dub line edit",
  "video.trim": "Video trim",
  "avatar.expand": "Avatar video",
  "avatar.create": "Avatar upload",
  sound: "Sound",
  image: "Image",
};

export const kindName = (kind: string): string => KINDS[kind] ?? kind;
export const kinds = (): string[] => Object.keys(KINDS);

export function count(n: number, one: string, many = `${one}s`): string {
  return `${n.toLocaleString("en")} ${n === 1 ? one : many}`;
}

export const credits = (n: number): string => count(n, "credit");

/** What a job cost, in words: a failed or cancelled job was refunded. */
export function jobCost(job: Job): string {
  switch (job.status) {
    case "completed":
      return credits(job.credits);
    case "failed":
    case "cancelled":
      return "refunded";
    default:
      return `${credits(job.credits)} held`;
  }
}

export const STATUS: Record<Job["status"], string> = {
  queued: "Queued",
  processing: "Working",
  completed: "Done",
  failed: "Failed",
  cancelled: "Cancelled",
};

export function when(iso: string): string {
  const t = new Date(iso);
  const s = (Date.now() - t.getTime()) / 1000;
  if (s < 45) return "just now";
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return t.toLocaleDateString("en", { day: "numeric", month: "short", year: "numeric" });
}

export function seconds(s: number): string {
  if (!Number.isFinite(s)) return "–";
  const m = Math.floor(s / 60);
  const r = s - m * 60;
  return m ? `${m}:${r.toFixed(0).padStart(2, "0")}` : `${r.toFixed(1)} s`;
}

/** A refusal in a person's words; `labels` names the form's fields
 * (`{ speed: "Speed" }`) so that a parameter reads as its label. */
export function problem(e: unknown, labels: Record<string, string> = {}): string {
  if (isAbort(e)) return "";
  if (!(e instanceof ApiError)) return "The server could not be reached. Check that it is running and try again.";
  switch (e.code) {
    case "invalid_parameter": {
      const label = (e.param && labels[e.param]) || "A value";
      return `${label} ${sentence(e.reason)}`;
    }
    case "insufficient_credits":
      return "Your balance is too low for this. Ask the operator for credits or make the request smaller.";
    case "insufficient_permissions":
      return "This key can only read. Sign in with a write key to do this.";
    case "invalid_api_key":
    case "missing_api_key":
      return "That key is not valid (it may be expired or revoked).";
    case "rate_limit_exceeded":
      return "Too many requests in a short time. Wait a moment and try again.";
    case "concurrent_jobs_limit_exceeded":
      return "You have as many jobs running as your account allows. Wait for one to finish.";
    case "payload_too_large":
      return "The file is larger than the server accepts.";
    default:
      return e.message.replace(/`([^`]+)`/g, (_, name: string) => labels[name] ?? name);
  }
}

function sentence(reason: string): string {
  const r = reason.replace(/`([^`]+)`/g, "$1").trim();
  return /[.!?]$/.test(r) ? r : `${r}.`;
}

/** Why a request priced at `estimate` cannot be sent on `balance` ("" when
 * it can, or while the price is not known). */
export function overBudget(estimate: number | null, balance: number): string {
  return estimate !== null && estimate > balance ? `This costs ${credits(estimate)}; your balance is ${credits(balance)}.` : "";
}
