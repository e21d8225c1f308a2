import type { Event } from 'node-zookeeper-client';
import { SharedWatches } from '../../src/store/zookeeper/shared-watches.js';

/** A client's watch as the test drives it: set with a watcher, answered, then fired. */
class Client {
  sets = 0;
  private watcher?: (event: Event) => void;
  private answer?: (value: string[] | undefined) => void;

  set = (watcher: (event: Event) => void) => {
    this.sets++;
    this.watcher = watcher;
    return new Promise<string[] | undefined>((resolve) => (this.answer = resolve));
  };

  answers(value: string[] | undefined): void {
    this.answer?.(value);
  }

  fires(): void {
    this.watcher?.({ getName: () => 'NODE_CHILDREN_CHANGED' } as Event);
  }
}

describe('SharedWatches: one client watch per node for the contenders of a process', () => {
  it('sets one watch for a dozen listeners, tells them all when it fires, and sets the next anew', async () => {
    const watches = new SharedWatches<string[]>();
    const client = new Client();
    const told: number[] = [];
    const answers = Array.from({ length: 12 }, (_, i) =>
      watches.join('/lock', () => told.push(i), client.set),
    );
    client.answers(['a-0000000001']);
    expect(await Promise.all(answers)).toEqual(Array(12).fill(['a-0000000001']));
    expect(client.sets).toBe(1);
    client.fires();
    expect(told).toEqual(Array.from({ length: 12 }, (_, i) => i));
    // A watch fires once: whoever still waits sets the next.
    void watches.join('/lock', () => undefined, client.set);
    expect(client.sets).toBe(2);
  });

  it('keeps no watch of a node that was gone, and none after the session ended', async () => {
    const watches = new SharedWatches<true>();
    const client = new Client();
    const gone = watches.join('/lock/w-1', () => undefined, client.set as never);
    client.answers(undefined);
    expect(await gone).toBeUndefined();
    void watches.join('/lock/w-1', () => undefined, client.set as never);
    expect(client.sets).toBe(2);
    watches.clear();
    void watches.join('/lock/w-1', () => undefined, client.set as never);
    expect(client.sets).toBe(3);
  });
});
