import type { StateStore } from './state-store.js';

/** Keeps the sample's data in this process: enough for one process, lost on restart. */
export class MemoryStateStore implements StateStore {
  private readonly values = new Map<string, string>();
  private readonly lists = new Map<string, string[]>();

  async get(key: string): Promise<string | undefined> {
    return this.values.get(key);
  }

  async set(key: string, value: string): Promise<void> {
    this.values.set(key, value);
  }

  async increment(key: string, by: number): Promise<number> {
    const next = Number(this.values.get(key) ?? 0) + by;
    this.values.set(key, String(next));
    return next;
  }

  async append(key: string, value: string): Promise<void> {
    const list = this.lists.get(key);
    if (list) list.push(value);
    else this.lists.set(key, [value]);
  }

  async list(key: string): Promise<string[]> {
    return [...(this.lists.get(key) ?? [])];
  }
}
