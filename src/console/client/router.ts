import { signal } from "@preact/signals";

/** The page's address; views are chosen from it and links change it without a reload. */
export const path = signal(location.pathname);
export const search = signal(location.search);

export function navigate(to: string, replace = false) {
  const target = new URL(to, location.href);
  if (replace) history.replaceState(null, "", target);
  else history.pushState(null, "", target);
  path.value = target.pathname;
  search.value = target.search;
}

addEventListener("popstate", () => {
  path.value = location.pathname;
  search.value = location.search;
});

/** Same-origin links move within the console; the others are left to the browser. */
document.addEventListener("click", (event) => {
  const link = (event.target as Element | null)?.closest?.("a[href]") as HTMLAnchorElement | null;
  if (
    !link ||
    link.target ||
    link.hasAttribute("download") ||
    link.origin !== location.origin ||
    link.pathname.startsWith("/api/") ||
    event.defaultPrevented ||
    event.button !== 0 ||
    event.metaKey ||
    event.ctrlKey ||
    event.shiftKey
  )
    return;
  event.preventDefault();
  navigate(link.pathname + link.search);
});

/** `/campaigns/:id` against `/campaigns/abc`: the named parts, or undefined. */
export function match(pattern: string, at: string): Record<string, string> | undefined {
  const want = pattern.split("/");
  const have = at.split("/");
  if (want.length !== have.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    const part = want[i] as string;
    const value = have[i] as string;
    if (part.startsWith(":")) params[part.slice(1)] = decodeURIComponent(value);
    else if (part !== value) return undefined;
  }
  return params;
}
