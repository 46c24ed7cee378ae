/** A task refused because too many were already waiting under its key. */
export class QueueFullError extends Error {
  constructor(readonly key: string) {
    super("too many tasks waiting");
    this.name = "QueueFullError";
  }
}

/**
 * Runs tasks that share a key one after another; tasks under different keys run freely. With
 * `maxWaiting`, a key's line is bounded: while the database is slow or away, work piles up
 * here, and past the bound a task is refused at once rather than held in memory.
 */
export class KeyedMutex {
  private readonly tails = new Map<string, Promise<unknown>>();
  private readonly waiting = new Map<string, number>();

  constructor(private readonly maxWaiting = Number.POSITIVE_INFINITY) {}

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const queued = this.waiting.get(key) ?? 0;
    if (queued >= this.maxWaiting) return Promise.reject(new QueueFullError(key));
    this.waiting.set(key, queued + 1);
    const previous = this.tails.get(key) ?? Promise.resolve();
    const result = previous.then(task, task);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      const left = (this.waiting.get(key) ?? 1) - 1;
      if (left > 0) this.waiting.set(key, left);
      else this.waiting.delete(key);
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }
}
