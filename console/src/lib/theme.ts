// Light or dark: the person's choice (kept in local storage) or else the
// system's, applied as data-theme on <html> (tokens.css).

const KEY = "mediagen.theme";
export type Theme = "light" | "dark" | "system";

const system = window.matchMedia("(prefers-color-scheme: dark)");

export function chosenTheme(): Theme {
  const t = localStorage.getItem(KEY);
  return t === "light" || t === "dark" ? t : "system";
}

export function applyTheme(theme: Theme = chosenTheme()): void {
  if (theme === "system") localStorage.removeItem(KEY);
  else localStorage.setItem(KEY, theme);
  const dark = theme === "dark" || (theme === "system" && system.matches);
  document.documentElement.dataset.theme = dark ? "dark" : "light";
}

system.addEventListener("change", () => applyTheme());
