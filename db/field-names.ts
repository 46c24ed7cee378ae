/**
 * The name each column of an import's header gives its cells in a lead's `fields`: the cell
 * trimmed, `column_<n>` (1-based) when blank, and `<name>_2`, `<name>_3`… for a name met again,
 * so that no column's value overwrites another's.
 */
export function fieldNamesOf(header: readonly string[]): string[] {
  const taken = new Set<string>();
  return header.map((cell, index) => {
    const base = cell.trim() || `column_${index + 1}`;
    let name = base;
    for (let n = 2; taken.has(name); n++) name = `${base}_${n}`;
    taken.add(name);
    return name;
  });
}

/** An object for names read from a file: `__proto__` is a field like any other. */
export const fieldRecord = (): Record<string, string> => Object.create(null);
