// The console's pages as paths under /app/ (history navigation: the
// server answers every /app/... path with the app).

export const BASE = "/app";

export const route = $state({ path: current() });

function current(): string {
  const p = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : "/";
  return p === "" ? "/" : p;
}

window.addEventListener("popstate", () => {
  route.path = current();
});

export function navigate(path: string): void {
  if (path === route.path) return;
  history.pushState(null, "", BASE + path);
  route.path = path;
  window.scrollTo(0, 0);
}

/** An in-app link's click: navigates without reloading (modifier keys and
 * middle clicks keep the browser's own behaviour). */
export function link(e: MouseEvent): void {
  const a = e.currentTarget as HTMLAnchorElement;
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  e.preventDefault();
  navigate(a.pathname.slice(BASE.length) || "/");
}
