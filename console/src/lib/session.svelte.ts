// Who is signed in. The key lives in this tab's session storage and goes
// only to this server. Signing out (or in as someone else) aborts every
// request in flight, empties every cache and, by a new `epoch`, remounts
// the page, so nothing of the last account stays on screen.

import { api, useKey } from "./api";
import type { Account } from "./types";

const KEY = "mediagen.key";

type Cleaner = () => void;
const cleaners = new Set<Cleaner>();

export const session = $state({
  account: null as Account | null,
  epoch: 0,
});

/** Registers what a cache must forget when the account changes. */
export function onSignOut(clean: Cleaner): void {
  cleaners.add(clean);
}

function reset(): void {
  for (const clean of cleaners) clean();
  session.account = null;
  session.epoch += 1;
}

/** Signs in with `key`: the account it belongs to, or the API's refusal. */
export async function signIn(key: string): Promise<void> {
  if (session.account) signOut();
  useKey(key.trim());
  try {
    session.account = await api<Account>("/v1/account");
    sessionStorage.setItem(KEY, key.trim());
  } catch (e) {
    useKey(null);
    throw e;
  }
}

/** Signs in again with the tab's stored key, if any. */
export async function resume(): Promise<void> {
  const key = sessionStorage.getItem(KEY);
  if (!key) return;
  try {
    await signIn(key);
  } catch {
    sessionStorage.removeItem(KEY);
  }
}

export function signOut(): void {
  sessionStorage.removeItem(KEY);
  useKey(null);
  reset();
}

/** Reads the balance again (after a request that holds credits). */
export async function refreshAccount(): Promise<void> {
  if (!session.account) return;
  const epoch = session.epoch;
  const account = await api<Account>("/v1/account");
  if (epoch === session.epoch) session.account = account;
}

export const canWrite = () => session.account?.key.level !== "read";
export const isAdmin = () => session.account?.key.level === "admin";
