import { slotOf } from '../cluster-slots.js';

/**
 * Keeps the order of the commands on each hash slot. The port promises that calls made one
 * after the other go out in that order, and a release sent right after an attempt must run
 * after it; GLIDE does not promise that of requests sent without awaiting (its core handles each
 * request in a task of its own, and bursts of a hundred come out of order). Every key of one
 * lock lies in one slot (they share a hash tag, for Redis Cluster), so a command that names a
 * slot waits for the answer to the previous one on that slot, and commands on other slots go
 * at once, pipelined.
 */
export class SlotOrder {
  /** The last command sent on each slot that has one still unanswered. */
  private readonly last = new Map<number, Promise<unknown>>();

  /** Sends `send` once every earlier command on `key`'s slot was answered. */
  run<T>(key: string | undefined, send: () => Promise<T>): Promise<T> {
    if (key === undefined) return send();
    const slot = slotOf(key);
    const previous = this.last.get(slot);
    const sent = previous ? previous.then(send, send) : send();
    this.last.set(slot, sent);
    const settled = () => {
      if (this.last.get(slot) === sent) this.last.delete(slot);
    };
    sent.then(settled, settled);
    return sent;
  }
}
