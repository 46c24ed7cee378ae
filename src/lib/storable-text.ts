/** Why a string is refused: PostgreSQL stores no NUL in text, and a lone surrogate has no UTF-8 form. */
export const UNSTORABLE_TEXT = "must not contain NUL or unpaired surrogate characters";

/** True when the database can store `text` as it is. */
export const isStorableText = (text: string) => text.isWellFormed() && !text.includes("\u0000");

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
