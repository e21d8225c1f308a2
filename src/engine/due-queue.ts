/**
 * Items by the monotonic ms at which they are due, earliest first: a binary min-heap over
 * parallel arrays (no object per entry). An item may be in it more than once; whoever pops
 * decides which of its entries still counts, so that a rescheduled or forgotten item costs a
 * push, not a search.
 */
export class DueQueue<T> {
  private readonly ats: number[] = [];
  private readonly items: T[] = [];

  get size(): number {
    return this.ats.length;
  }

  /** When the earliest entry is due; `Infinity` when there is none. */
  get nextAt(): number {
    return this.ats.length > 0 ? this.ats[0] : Infinity;
  }

  /** The earliest entry's item, without taking it. */
  peek(): T | undefined {
    return this.items[0];
  }

  push(at: number, item: T): void {
    this.ats.push(at);
    this.items.push(item);
    this.up(this.ats.length - 1);
  }

  /** Takes the earliest entry's item. */
  pop(): T | undefined {
    const last = this.ats.length - 1;
    if (last < 0) return undefined;
    const top = this.items[0];
    this.move(last, 0);
    this.ats.pop();
    this.items.pop();
    if (last > 0) this.down(0);
    return top;
  }

  /** Keeps only the entries `keep` accepts, in O(n): for dropping many stale entries at once. */
  filter(keep: (item: T, at: number) => boolean): void {
    let kept = 0;
    for (let i = 0; i < this.ats.length; i++) {
      if (keep(this.items[i], this.ats[i])) this.move(i, kept++);
    }
    this.ats.length = kept;
    this.items.length = kept;
    for (let i = (kept >> 1) - 1; i >= 0; i--) this.down(i);
  }

  private up(i: number): void {
    const at = this.ats[i];
    const item = this.items[i];
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (this.ats[parent] <= at) break;
      this.move(parent, i);
      i = parent;
    }
    this.ats[i] = at;
    this.items[i] = item;
  }

  private down(i: number): void {
    const n = this.ats.length;
    const at = this.ats[i];
    const item = this.items[i];
    for (;;) {
      let child = 2 * i + 1;
      if (child >= n) break;
      if (child + 1 < n && this.ats[child + 1] < this.ats[child]) child++;
      if (this.ats[child] >= at) break;
      this.move(child, i);
      i = child;
    }
    this.ats[i] = at;
    this.items[i] = item;
  }

  private move(from: number, to: number): void {
    this.ats[to] = this.ats[from];
    this.items[to] = this.items[from];
  }
}
