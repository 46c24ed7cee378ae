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

  constructor(
    private readonly runBatch: (
      campaignId: string,
      commands: CommandEntry<C>[],
    ) => Promise<CommandEntry<C>[]>,
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

  private admit(campaignId: string): boolean {
    return (this.lines.get(campaignId)?.length ?? 0) < this.maxWaiting;
  }

  private push(campaignId: string, entry: LineEntry<C>): void {
    const line = this.lines.get(campaignId);
    if (line) {
      line.push(entry);
      return;
    }
    this.lines.set(campaignId, [entry]);
    void this.drain(campaignId);
  }

  /** Runs the line's batches one after another until it is empty, then forgets it. */
  private async drain(campaignId: string): Promise<void> {
    const line = this.lines.get(campaignId) as LineEntry<C>[];
    while (line.length > 0) {
      const first = line[0] as LineEntry<C>;
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
        left = await this.runBatch(campaignId, batch);
      } catch (error) {
        for (const entry of batch) entry.reject(error);
      }
      line.splice(0, size, ...left);
    }
    this.lines.delete(campaignId);
  }
}
