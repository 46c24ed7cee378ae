import type { LiveCall } from "./dialing.ts";

/** How many changes a table keeps beside its shared base before it folds them into a new one. */
const MAX_CHANGES = 32;

const NO_CHANGES: ReadonlyMap<string, LiveCall | null> = new Map();

interface Counts {
  size: number;
  /** Calls placed and not yet with an agent: what progressive pacing counts against ready ones. */
  unbridged: number;
  /** Of those, the ones with no agent waiting for them: the ones that may be abandoned. */
  unreserved: number;
}

const NONE: Counts = { size: 0, unbridged: 0, unreserved: 0 };

/** Counts a call in (`by` 1) or out (-1). */
function count(counts: Counts, call: LiveCall, by: 1 | -1) {
  counts.size += by;
  if (call.bridged) return;
  counts.unbridged += by;
  if (call.agentId === null) counts.unreserved += by;
}

/**
 * A campaign's calls in flight, by id. Persistent: a change gives a new table and leaves the
 * one it was made from as it was, as the actor's state and the previews of decisions made on
 * it need. A change copies the few changes since the last fold rather than every call, which
 * with hundreds of calls in flight cost more than the event itself; the counts pacing reads
 * are kept as calls come and go.
 */
export class LiveCalls implements Iterable<LiveCall> {
  static readonly empty = new LiveCalls(new Map(), NO_CHANGES, NONE);

  static of(calls: Iterable<LiveCall>): LiveCalls {
    return LiveCalls.empty.with(calls);
  }

  private constructor(
    /** Never changed once built: every table folded from it shares it. */
    private readonly base: ReadonlyMap<string, LiveCall>,
    /** Calls set (or, null, removed) since `base`. */
    private readonly changes: ReadonlyMap<string, LiveCall | null>,
    private readonly counts: Readonly<Counts>,
  ) {}

  get size() {
    return this.counts.size;
  }

  get unbridged() {
    return this.counts.unbridged;
  }

  get unreserved() {
    return this.counts.unreserved;
  }

  get(id: string): LiveCall | undefined {
    const changed = this.changes.get(id);
    return changed === undefined ? this.base.get(id) : (changed ?? undefined);
  }

  has(id: string): boolean {
    return this.get(id) !== undefined;
  }

  /** With these calls, added or in place of those with their ids. */
  with(calls: Iterable<LiveCall>): LiveCalls {
    return this.changed(Array.from(calls, (call) => [call.id, call] as const));
  }

  without(id: string): LiveCalls {
    return this.has(id) ? this.changed([[id, null]]) : this;
  }

  *[Symbol.iterator](): Iterator<LiveCall> {
    for (const [id, call] of this.base) {
      const changed = this.changes.get(id);
      if (changed === undefined) yield call;
      else if (changed) yield changed;
    }
    for (const [id, call] of this.changes) if (call && !this.base.has(id)) yield call;
  }

  private changed(updates: readonly (readonly [string, LiveCall | null])[]): LiveCalls {
    let base = this.base;
    let changes = new Map(this.changes);
    const counts = { ...this.counts };
    for (const [id, call] of updates) {
      const before = changes.has(id) ? changes.get(id) : base.get(id);
      if (before) count(counts, before, -1);
      if (call) {
        count(counts, call, 1);
        // Back after it was removed: last in order, as a Map has it, which only a fold can say.
        if (changes.get(id) === null) {
          base = folded(base, changes);
          changes = new Map();
        }
      }
      if (call === null && !base.has(id)) changes.delete(id);
      else changes.set(id, call);
    }
    return changes.size <= MAX_CHANGES
      ? new LiveCalls(base, changes, counts)
      : new LiveCalls(folded(base, changes), NO_CHANGES, counts);
  }
}

/** A new base with the changes made to it. */
function folded(
  base: ReadonlyMap<string, LiveCall>,
  changes: ReadonlyMap<string, LiveCall | null>,
) {
  const next = new Map(base);
  for (const [id, call] of changes) {
    if (call) next.set(id, call);
    else next.delete(id);
  }
  return next;
}
