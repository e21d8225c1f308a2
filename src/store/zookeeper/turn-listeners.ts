import type { LockEvent } from '../lock-store.interface.js';

/**
 * Who hears of the turns of a key's contenders: the callers of this process that wait for the
 * key (the engine subscribes once per key it waits for). A turn names the contender's token, so
 * that the caller it belongs to makes the next attempt; nothing is parsed on the way.
 */
export class TurnListeners {
  private readonly byKey = new Map<string, Set<(event: LockEvent) => void>>();

  /** Adds `onEvent` to the listeners of `key`; returns how to remove it. */
  add(key: string, onEvent: (event: LockEvent) => void): () => void {
    let listeners = this.byKey.get(key);
    if (!listeners) this.byKey.set(key, (listeners = new Set()));
    listeners.add(onEvent);
    return () => {
      listeners.delete(onEvent);
      if (listeners.size === 0 && this.byKey.get(key) === listeners) this.byKey.delete(key);
    };
  }

  /** The contender of `token` was woken: its caller may hold now. */
  turn(key: string, token: string): void {
    for (const listener of this.byKey.get(key) ?? []) listener({ type: 'turn', token });
  }

  clear(): void {
    this.byKey.clear();
  }
}
