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
  /** A horizontal reference line (the legal limit), if any. */
  limit?: number;
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
 * The simulated day as an SVG document: dial ratio, abandon rate (with the limit dashed) and
 * occupancy, one panel each, over hours since the start. Plain SVG, no library.
 */
export function dayChart(
  samples: readonly DaySample[],
  options: { title: string; maxAbandonRate: number },
) {
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
        Math.max(options.maxAbandonRate * 1.5, ...samples.map((s) => s.abandonRate)),
      ),
      format: (v) => `${(v * 100).toFixed(1)}%`,
      color: "#d62728",
      limit: options.maxAbandonRate,
    },
    {
      title: "agent occupancy",
      value: (s) => s.occupancy,
      max: 1,
      format: (v) => `${(v * 100).toFixed(0)}%`,
      color: "#2ca02c",
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
    if (panel.limit !== undefined)
      parts.push(
        `<line x1="${LEFT}" x2="${LEFT + plotWidth}" y1="${y(panel.limit)}" y2="${y(panel.limit)}" stroke="${panel.color}" stroke-dasharray="4 4" opacity="0.6"/>`,
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
