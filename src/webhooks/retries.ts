const FIRST_RETRY_MS = 10_000;
const LONGEST_WAIT_MS = 3_600_000;

/**
 * When a failed attempt is tried again: 10 s after the first (so within 30 s), then twice as
 * long each time up to an hour, each wait drawn within ±25 % so that a receiver back from an
 * outage is not hit by every sender at once. Undefined once the event is older than `window`.
 */
export function retryAt(
  params: { attempt: number; createdAt: Date; now: Date; windowMs: number },
  random: () => number = Math.random,
): Date | undefined {
  const base = Math.min(FIRST_RETRY_MS * 2 ** (params.attempt - 1), LONGEST_WAIT_MS);
  const wait = base * (0.75 + random() * 0.5);
  const at = params.now.getTime() + wait;
  return at - params.createdAt.getTime() > params.windowMs ? undefined : new Date(at);
}
