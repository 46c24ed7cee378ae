export interface Backoff {
  /** The first wait, in milliseconds. */
  initialMs: number;
  /** The longest wait, in milliseconds. */
  maxMs: number;
}

export const DEFAULT_BACKOFF: Backoff = { initialMs: 1_000, maxMs: 30_000 };

/**
 * How long to wait before reconnect attempt `attempt` (0 for the first): `initialMs` doubling
 * up to `maxMs`, each wait drawn between half and all of that, so that the clients a server
 * dropped all at once (a restart) come back spread out rather than together.
 */
export function reconnectDelay(attempt: number, backoff: Backoff, random = Math.random): number {
  const ceiling = Math.min(backoff.maxMs, backoff.initialMs * 2 ** Math.min(attempt, 30));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}
