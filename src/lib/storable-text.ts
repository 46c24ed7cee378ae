/** Why a string is refused: PostgreSQL stores no NUL in text, and a lone surrogate has no UTF-8 form. */
export const UNSTORABLE_TEXT = "must not contain NUL or unpaired surrogate characters";

/** True when the database can store `text` as it is. */
export const isStorableText = (text: string) => text.isWellFormed() && !text.includes("\u0000");

/**
 * `text` as the database can store it: each NUL and unpaired surrogate replaced by U+FFFD, as
 * a decoder replaces bytes it cannot read. For text from outside kept as it came, such as a
 * webhook receiver's answer, which is logged rather than refused.
 */
export const storableText = (text: string) =>
  isStorableText(text) ? text : text.replaceAll("\u0000", "\uFFFD").toWellFormed();

/** Nesting past which `holdsUnstorableText` leaves the value to the walk that needs no stack. */
const MAX_RECURSION = 32;

/**
 * Whether a decoded JSON value holds a string the database cannot store, keys included. It
 * allocates nothing, since it runs on every request and almost every request passes; only a
 * value nested deeper than MAX_RECURSION is handed to `unstorableTextPaths`.
 */
export function holdsUnstorableText(value: unknown, depth = 0): boolean {
  if (typeof value === "string") return !isStorableText(value);
  if (value === null || typeof value !== "object") return false;
  if (depth >= MAX_RECURSION) return unstorableTextPaths(value).length > 0;
  if (Array.isArray(value)) {
    for (const element of value) if (holdsUnstorableText(element, depth + 1)) return true;
    return false;
  }
  for (const key in value) {
    if (!isStorableText(key)) return true;
    if (holdsUnstorableText((value as Record<string, unknown>)[key], depth + 1)) return true;
  }
  return false;
}

/**
 * Dotted paths ("calling_window.start", "campaign_ids.0") of the strings in a decoded JSON
 * value, keys included, that the database cannot store. Walked without recursion, so a
 * deeply nested value cannot exhaust the stack.
 */
export function unstorableTextPaths(value: unknown): string[] {
  const found: string[] = [];
  const pending: [unknown, string][] = [[value, ""]];
  const join = (path: string, key: string) => (path === "" ? key : `${path}.${key}`);
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [item, path] = next;
    if (typeof item === "string") {
      if (!isStorableText(item)) found.push(path);
    } else if (Array.isArray(item)) {
      item.forEach((element, index) => {
        pending.push([element, join(path, String(index))]);
      });
    } else if (item !== null && typeof item === "object") {
      for (const [key, element] of Object.entries(item)) {
        if (!isStorableText(key)) found.push(join(path, key));
        else pending.push([element, join(path, key)]);
      }
    }
  }
  return found.reverse();
}
