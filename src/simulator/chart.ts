import type { AbandonInterval, OccupancyInterval } from "./intervals.ts";

/** One point of the simulated day, taken at a fixed interval. */
export interface DaySample {
  /** Milliseconds since the simulation started. */
  at: number;
  /** The dial ratio paced at, averaged over the interval. */
  ratio: number;
  /** The ledger's abandon rate over the legal window at the sample. */
  abandonRate: number;
  /** Busy over logged-in agent time during the interval. */
  occupancy: number;
}

interface Panel {
  title: string;
  value: (sample: DaySample) => number;
  max: number;
  format: (value: number) => string;
  color: string;
  /** Horizontal reference lines (the legal limit, twice it, an occupancy floor), if any. */
  limits?: { value: number; label: string }[];
  /** Values over intervals, drawn as steps behind the line. */
  steps?: { from: number; to: number; value: number }[];
}

const WIDTH = 820;
const PANEL_HEIGHT = 150;
const LEFT = 60;
const RIGHT = 20;
const TOP = 40;
const GAP = 40;

const xmlText = (text: string) =>
  text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");

const niceCeiling = (value: number) => {
  if (value <= 0) return 1;
  const step = 10 ** Math.floor(Math.log10(value));
  return Math.ceil(value / step) * step;
};

/**
 * The simulated day as an SVG document: dial ratio, abandon rate and occupancy, one panel
 * each, over hours since the start. The abandon panel marks the limit and twice it (dashed)
 * and, when given, the rate of each 15-minute interval (steps); the occupancy panel marks
 * 85% and the occupancy of each 5-minute interval; the warm-up is shaded. Plain SVG.
 */
export function dayChart(
  samples: readonly DaySample[],
  options: {
    title: string;
    maxAbandonRate: number;
    intervals?: { abandons: AbandonInterval[]; occupancy: OccupancyInterval[] };
    /** The warm-up left out of the occupancy dips (ms since the start); shaded. */
    warmUpMs?: number;
  },
) {
  const intervals = options.intervals;
  const span = Math.max(1, samples[samples.length - 1]?.at ?? 1);
  const panels: Panel[] = [
    {
      title: "dial ratio",
      value: (s) => s.ratio,
      max: niceCeiling(Math.max(1, ...samples.map((s) => s.ratio))),
      format: (v) => v.toFixed(1),
      color: "#1f77b4",
    },
    {
      title: "abandon rate (legal window)",
      value: (s) => s.abandonRate,
      max: niceCeiling(
        Math.max(
          options.maxAbandonRate * (intervals ? 2.5 : 1.5),
          ...samples.map((s) => s.abandonRate),
        ),
      ),
      format: (v) => `${(v * 100).toFixed(1)}%`,
      color: "#d62728",
      limits: [
        { value: options.maxAbandonRate, label: "limit" },
        ...(intervals ? [{ value: 2 * options.maxAbandonRate, label: "2 × limit" }] : []),
      ],
      steps: intervals?.abandons.map(({ from, to, rate }) => ({ from, to, value: rate })),
    },
    {
      title: "agent occupancy",
      value: (s) => s.occupancy,
      max: 1,
      format: (v) => `${(v * 100).toFixed(0)}%`,
      color: "#2ca02c",
      limits: intervals ? [{ value: 0.85, label: "85%" }] : [],
      steps: intervals?.occupancy.map(({ from, to, occupancy }) => ({
        from,
        to,
        value: occupancy,
      })),
    },
  ];
  const plotWidth = WIDTH - LEFT - RIGHT;
  const height = TOP + panels.length * (PANEL_HEIGHT + GAP) + 10;
  const x = (at: number) => LEFT + (at / span) * plotWidth;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${LEFT}" y="22" font-size="14">${xmlText(options.title)}</text>`,
  ];
  panels.forEach((panel, index) => {
    const top = TOP + index * (PANEL_HEIGHT + GAP) + 14;
    const y = (value: number) =>
      top + PANEL_HEIGHT - (Math.min(value, panel.max) / panel.max) * PANEL_HEIGHT;
    parts.push(`<text x="${LEFT}" y="${top - 6}">${xmlText(panel.title)}</text>`);
    parts.push(
      `<rect x="${LEFT}" y="${top}" width="${plotWidth}" height="${PANEL_HEIGHT}" fill="none" stroke="#999"/>`,
    );
    for (const fraction of [0, 0.5, 1]) {
      const value = panel.max * fraction;
      parts.push(
        `<text x="${LEFT - 6}" y="${y(value) + 4}" text-anchor="end">${panel.format(value)}</text>`,
      );
    }
    if (options.warmUpMs)
      parts.push(
        `<rect x="${LEFT}" y="${top}" width="${(x(options.warmUpMs) - LEFT).toFixed(1)}" height="${PANEL_HEIGHT}" fill="#000" opacity="0.05"/>`,
      );
    for (const step of panel.steps ?? [])
      parts.push(
        `<rect x="${x(step.from).toFixed(1)}" y="${y(step.value).toFixed(1)}" width="${Math.max(0, x(step.to) - x(step.from) - 1).toFixed(1)}" height="${(top + PANEL_HEIGHT - y(step.value)).toFixed(1)}" fill="${panel.color}" opacity="0.15"/>`,
      );
    for (const limit of panel.limits ?? [])
      parts.push(
        `<line x1="${LEFT}" x2="${LEFT + plotWidth}" y1="${y(limit.value)}" y2="${y(limit.value)}" stroke="${panel.color}" stroke-dasharray="4 4" opacity="0.6"/>`,
        `<text x="${LEFT + plotWidth - 4}" y="${y(limit.value) - 3}" text-anchor="end" fill="${panel.color}">${xmlText(limit.label)}</text>`,
      );
    const points = samples.map((s) => `${x(s.at).toFixed(1)},${y(panel.value(s)).toFixed(1)}`);
    if (points.length > 0)
      parts.push(
        `<polyline points="${points.join(" ")}" fill="none" stroke="${panel.color}" stroke-width="1.5"/>`,
      );
  });
  const axisY = TOP + panels.length * (PANEL_HEIGHT + GAP) - GAP + 28;
  // Ticks at a round number of minutes, about four to eight of them.
  const minutes = span / 60_000;
  const step = [1, 2, 5, 10, 15, 30, 60, 120].find((each) => minutes / each <= 8) ?? 240;
  for (let minute = 0; minute <= minutes + 1e-9; minute += step) {
    const label = step >= 60 ? `${minute / 60} h` : `${minute} min`;
    parts.push(`<text x="${x(minute * 60_000)}" y="${axisY}" text-anchor="middle">${label}</text>`);
  }
  parts.push("</svg>");
  return `${parts.join("\n")}\n`;
}
