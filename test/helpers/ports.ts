/**
 * Loopback ports for the telephony tests' fixed bindings (SIP endpoints, RTP ranges).
 *
 * They come from below Linux's ephemeral range (32768–60999), where the kernel never picks
 * a port for an outgoing connection or a bind to 0, and from one counter, so the blocks a
 * test run hands out never overlap. The start is random so that two runs on one machine
 * rarely meet.
 */
const FIRST = 10_000;
const LAST = 32_000;
let next = FIRST + Math.floor(Math.random() * 200) * 100;

/** `size` consecutive ports, starting on an even one (RTP wants even ports). */
export function portBlock(size: number): [number, number] {
  const span = size + (size % 2);
  if (next + span > LAST) next = FIRST;
  const first = next;
  next += span;
  return [first, first + size - 1];
}

/** One port for a SIP endpoint. */
export const sipPort = (): number => portBlock(2)[0];
