/** The middle value (mean of the two middle ones for an even count); NaN for no values. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

/** The nearest-rank percentile `p` (0–100) of the values; NaN for no values. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[
    Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))
  ] as number;
}

/**
 * `values` grouped by the 10 s window their `times` (ms from the start) fall in, in order, a
 * window with none empty; given `windows`, a value past the last falls in the last.
 */
export function byTenSeconds(
  values: readonly number[],
  times: readonly number[],
  windows?: number,
): number[][] {
  const grouped: number[][] = Array.from({ length: windows ?? 0 }, () => []);
  values.forEach((value, index) => {
    const window = Math.floor((times[index] ?? 0) / 10_000);
    const at = windows === undefined ? window : Math.min(window, windows - 1);
    for (let missing = grouped.length; missing <= at; missing++) grouped.push([]);
    grouped[at]?.push(value);
  });
  return grouped;
}

/**
 * The median of the ratios within each round, `over[i] ÷ under[i]`: two targets measured
 * seconds apart in one round, so a neighbour's load that comes and goes between rounds
 * cancels out, where the ratio of the two medians keeps it.
 */
export const medianOfRoundRatios = (over: readonly number[], under: readonly number[]) =>
  median(over.map((value, index) => value / (under[index] ?? Number.NaN)));

export const round = (value: number, digits = 0) => {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
};
