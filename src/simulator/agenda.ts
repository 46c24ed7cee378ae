/** Something due at an instant of simulated time. */
interface Entry {
  at: number;
  order: number;
  run: () => Promise<void> | void;
}

/**
 * The simulation's future: actions keyed by simulated instant, taken earliest first and, at
 * the same instant, in the order they were scheduled (a binary heap).
 */
export class Agenda {
  private readonly heap: Entry[] = [];
  private scheduled = 0;

  get size() {
    return this.heap.length;
  }

  at(at: number, run: Entry["run"]) {
    const entry = { at, order: this.scheduled++, run };
    this.heap.push(entry);
    let index = this.heap.length - 1;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if (!this.before(entry, this.heap[parent] as Entry)) break;
      this.heap[index] = this.heap[parent] as Entry;
      index = parent;
    }
    this.heap[index] = entry;
  }

  /** The instant of the next action, if any. */
  peek(): number | undefined {
    return this.heap[0]?.at;
  }

  take(): Entry | undefined {
    const top = this.heap[0];
    const last = this.heap.pop();
    if (!top || !last || this.heap.length === 0) return top;
    let index = 0;
    for (;;) {
      const left = 2 * index + 1;
      if (left >= this.heap.length) break;
      const right = left + 1;
      const child =
        right < this.heap.length && this.before(this.heap[right] as Entry, this.heap[left] as Entry)
          ? right
          : left;
      if (!this.before(this.heap[child] as Entry, last)) break;
      this.heap[index] = this.heap[child] as Entry;
      index = child;
    }
    this.heap[index] = last;
    return top;
  }

  private before(a: Entry, b: Entry) {
    return a.at < b.at || (a.at === b.at && a.order < b.order);
  }
}
