import { QueueFullError } from "../src/lib/keyed-mutex.ts";

/** A unit of a campaign's line: a command waiting for its reply, or a task of the registry's. */
export type LineEntry<C> =
  | { kind: "command"; command: C; resolve(value: unknown): void; reject(error: unknown): void }
  | { kind: "task"; run(): Promise<void> };

type CommandEntry<C> = Extract<LineEntry<C>, { kind: "command" }>;

/**
 * Each campaign's line of commands: one batch at a time per campaign, campaigns side by side.
 * Commands that may share a commit (`batchable`) and wait next to each other are taken
 * together, up to `maxBatch`; the batch's runner hands back those it did not run, which go
 * first in the next batch. A line is bounded: past `maxWaiting`, a command is refused at
 * once rather than held while the database is slow or away.
 */
export class CampaignLines<C> {
  private readonly lines = new Map<string, LineEntry<C>[]>();
  /** Lines idle while a commit overlaps, woken by the next entry. */
  private readonly wakers = new Map<string, () => void>();

  constructor(
    private readonly runBatch: (
      campaignId: string,
      commands: CommandEntry<C>[],
    ) => Promise<BatchOutcome<C>>,
    private readonly batchable: (command: C) => boolean,
    private readonly maxWaiting: number,
    private readonly maxBatch: number,
  ) {}

  /** Queues a command; resolves with what the batch that runs it answers for it. */
  command(campaignId: string, command: C): Promise<unknown> {
    return new Promise((resolve, reject) => {
      if (!this.admit(campaignId)) return reject(new QueueFullError(campaignId));
      this.push(campaignId, { kind: "command", command, resolve, reject });
    });
  }

  /** Runs `task` in the campaign's line, after every command queued before it. */
  task(campaignId: string, task: () => Promise<void>): Promise<void> {
    return new Promise((resolve, reject) => {
      if (!this.admit(campaignId)) return reject(new QueueFullError(campaignId));
      this.push(campaignId, { kind: "task", run: () => task().then(resolve, reject) });
    });
  }

  /** A command a batch's runner set aside, back at the end of its campaign's line. */
  again(campaignId: string, entry: CommandEntry<C>): void {
    this.push(campaignId, entry);
  }

  private admit(campaignId: string): boolean {
    return (this.lines.get(campaignId)?.length ?? 0) < this.maxWaiting;
  }

  private push(campaignId: string, entry: LineEntry<C>): void {
    const line = this.lines.get(campaignId);
    if (line) {
      line.push(entry);
      this.wakers.get(campaignId)?.();
      return;
    }
    this.lines.set(campaignId, [entry]);
    void this.drain(campaignId);
  }

  /** Resolves when the overlapping commit settles or a new entry joins the line. */
  private waitFor(campaignId: string, overlapping: Promise<void>): Promise<void> {
    return new Promise<void>((resolve) => {
      this.wakers.set(campaignId, resolve);
      void overlapping.then(resolve);
    }).finally(() => this.wakers.delete(campaignId));
  }

  /**
   * Runs the line's batches one after another until it is empty, then forgets it. A batch
   * may leave its commit running (`overlapping`): the commands after it go on meanwhile
   * (the batch's runner makes each wait for what it must), unless the batch says they must
   * wait (`blocked`); a task waits for it.
   */
  private async drain(campaignId: string): Promise<void> {
    const line = this.lines.get(campaignId) as LineEntry<C>[];
    let overlapping: Promise<void> | undefined;
    for (;;) {
      if (line.length === 0) {
        if (!overlapping) break;
        await this.waitFor(campaignId, overlapping);
        continue;
      }
      const first = line[0] as LineEntry<C>;
      if (overlapping && first.kind === "task") {
        await overlapping;
        overlapping = undefined;
      }
      if (first.kind === "task") {
        await first.run().catch(() => undefined);
        line.shift();
        continue;
      }
      let size = 1;
      if (this.batchable(first.command)) {
        while (size < line.length && size < this.maxBatch) {
          const next = line[size] as LineEntry<C>;
          if (next.kind !== "command" || !this.batchable(next.command)) break;
          size++;
        }
      }
      const batch = line.slice(0, size) as CommandEntry<C>[];
      let left: CommandEntry<C>[] = [];
      try {
        const outcome = await this.runBatch(campaignId, batch);
        left = outcome.left;
        if (outcome.overlapping) {
          const current: Promise<void> = outcome.overlapping.finally(() => {
            if (overlapping === current) overlapping = undefined;
          });
          overlapping = current;
          if (outcome.blocked) {
            await current;
            overlapping = undefined;
          }
        }
      } catch (error) {
        for (const entry of batch) entry.reject(error);
      }
      line.splice(0, size, ...left);
    }
    this.lines.delete(campaignId);
  }
}

/**
 * What a batch's run hands back: the commands it did not run, to go first in the next batch,
 * and a commit it left running, which later batchable commands need not wait for.
 */
export interface BatchOutcome<C> {
  left: CommandEntry<C>[];
  overlapping?: Promise<void> | undefined;
  /** The commands handed back wait for the commit left running. */
  blocked?: boolean | undefined;
}
