import { DueQueue } from '../../src/engine/due-queue.js';

/** Pops everything: the items in the order the queue gives them. */
function drain<T>(queue: DueQueue<T>): T[] {
  const items: T[] = [];
  for (let item = queue.pop(); item !== undefined; item = queue.pop()) items.push(item);
  return items;
}

describe('DueQueue: items by when they are due, earliest first', () => {
  it('gives items back in the order of their times, whatever the order they came in', () => {
    const queue = new DueQueue<number>();
    const times = Array.from({ length: 1_000 }, (_, i) => (i * 7919) % 1_000);
    for (const at of times) queue.push(at, at);
    expect(queue.nextAt).toBe(0);
    expect(drain(queue)).toEqual([...times].sort((a, b) => a - b));
    expect(queue.nextAt).toBe(Infinity);
    expect(queue.pop()).toBeUndefined();
  });

  it('keeps an item once per push, and drops the entries a filter refuses, still in order', () => {
    const queue = new DueQueue<string>();
    queue.push(30, 'a');
    queue.push(10, 'b');
    queue.push(20, 'a');
    queue.push(5, 'c');
    queue.push(40, 'd');
    queue.filter((item, at) => !(item === 'a' && at === 20) && item !== 'c');
    expect(queue.size).toBe(3);
    expect(queue.nextAt).toBe(10);
    expect(drain(queue)).toEqual(['b', 'a', 'd']);
  });
});
