/**
 * Writes that arrive one at a time, committed together: what is submitted while earlier
 * batches are being written waits for a free slot and then goes as one batch. Under load one
 * statement (one round trip, one commit) carries many items; alone, an item goes at once.
 * At most `slots` batches are written at a time.
 */
export class GroupCommit<T, R> {
  private queue: { item: T; resolve: (result: R) => void; reject: (error: unknown) => void }[] = [];
  private writing = 0;
  private scheduled = false;

  constructor(
    /** Writes a batch; returns each item's result, in order. */
    private readonly write: (items: T[]) => Promise<R[]>,
    private readonly slots: number,
    private readonly maxBatch: number,
  ) {}

  submit(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.schedule();
    });
  }

  /** Items submitted in the same turn go together: the batch starts once that turn is done. */
  private schedule(): void {
    if (this.scheduled || this.writing >= this.slots || this.queue.length === 0) return;
    this.scheduled = true;
    queueMicrotask(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    while (this.writing < this.slots && this.queue.length > 0) {
      const batch = this.queue.splice(0, this.maxBatch);
      this.writing++;
      this.write(batch.map((entry) => entry.item))
        .then(
          (results) => {
            batch.forEach((entry, index) => {
              entry.resolve(results[index] as R);
            });
          },
          (error: unknown) => {
            for (const entry of batch) entry.reject(error);
          },
        )
        .finally(() => {
          this.writing--;
          this.schedule();
        });
    }
  }
}
