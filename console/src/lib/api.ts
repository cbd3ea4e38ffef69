// Every request the console makes: to this server's API only, with the
// signed-in key, on the sign-in's abort signal (signing out cancels every
// request still in flight, so no answer for the last account lands on the
// next one's page).

export interface ErrorBody {
  code: string;
  message: string;
  param?: string;
  details?: Record<string, unknown>;
}

/** A refusal from the API, in the spec's error shape. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly param?: string;
  readonly details: Record<string, unknown>;
  constructor(status: number, body: ErrorBody | undefined) {
    super(body?.message ?? `The server answered ${status}.`);
    this.status = status;
    this.code = body?.code ?? "http_error";
    this.param = body?.param;
    this.details = body?.details ?? {};
  }
  /** The reason alone, without the parameter's API name. */
  get reason(): string {
    const r = this.details.reason;
    return typeof r === "string" ? r : this.message;
  }
}

let key: string | null = null;
let controller = new AbortController();

/** The key every request carries from now on (null: signed out). */
export function useKey(next: string | null): void {
  key = next;
  controller.abort();
  controller = new AbortController();
}

/** Whether an error is this sign-in's own cancellation, not a failure. */
export function isAbort(e: unknown): boolean {
  return e instanceof DOMException && e.name === "AbortError";
}

export interface RequestOptions {
  method?: string;
  body?: unknown;
  form?: FormData;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

function signalFor(own?: AbortSignal): AbortSignal {
  return own ? AbortSignal.any([own, controller.signal]) : controller.signal;
}

/** A raw response from the API (for streams); throws ApiError on a refusal. */
export async function request(path: string, opts: RequestOptions = {}): Promise<Response> {
  if (!path.startsWith("/")) throw new Error("the console only talks to its own server");
  const headers: Record<string, string> = { ...opts.headers };
  if (key) headers.Authorization = `Bearer ${key}`;
  let body: BodyInit | undefined;
  if (opts.form) body = opts.form;
  else if (opts.body !== undefined) {
    headers["Content-Type"] = "application/json";
    body = JSON.stringify(opts.body);
  }
  const res = await fetch(path, { method: opts.method ?? "GET", headers, body, signal: signalFor(opts.signal) });
  if (!res.ok) {
    let err: ErrorBody | undefined;
    try {
      err = (await res.json())?.error;
    } catch {
      err = undefined;
    }
    throw new ApiError(res.status, err);
  }
  return res;
}

/** A JSON answer from the API. */
export async function api<T>(path: string, opts: RequestOptions = {}): Promise<T> {
  const res = await request(path, opts);
  const text = await res.text();
  return (text ? JSON.parse(text) : null) as T;
}

/** `path?query` with the defined values only. */
export function withQuery(path: string, query: Record<string, string | number | boolean | undefined | null>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

/** A result URL as a path on this server (the API gives absolute ones). */
export function localUrl(url: string): string {
  const u = new URL(url, location.origin);
  if (u.origin !== location.origin) throw new Error("a media address on another server");
  return u.pathname + u.search;
}
