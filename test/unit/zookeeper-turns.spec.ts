import type { LockEvent } from '../../src/store/lock-store.interface.js';
import { Contenders } from '../../src/store/zookeeper/contender.js';
import { TurnListeners } from '../../src/store/zookeeper/turn-listeners.js';

/** The contenders of a store and the listeners of its keys, wired as the store wires them. */
function wired() {
  const listeners = new TurnListeners();
  const contenders = new Contenders(({ key, token }) => listeners.turn(key, token));
  const heard = (key: string) => {
    const events: LockEvent[] = [];
    const stop = listeners.add(key, (event) => events.push(event));
    return { events, stop };
  };
  return { contenders, heard };
}

describe('ZooKeeper: a contender’s watch wakes its own caller', () => {
  it('tells the listeners of its key that the turn of its token came, and no other key', () => {
    const { contenders, heard } = wired();
    const mine = heard('lock:a');
    const other = heard('lock:b');
    const contender = contenders.enter('lock:a', 'token-1', '/locks/lock:a', 1);
    contenders.enter('lock:a', 'token-2', '/locks/lock:a', 1);
    contender.wake();
    expect(mine.events).toEqual([{ type: 'turn', token: 'token-1' }]);
    expect(other.events).toEqual([]);
  });

  it('wakes nobody once its caller left, or once its token lined up anew', () => {
    const { contenders, heard } = wired();
    const { events } = heard('lock:a');
    const departed = contenders.enter('lock:a', 'token-1', '/locks/lock:a', 1);
    departed.departed = true;
    departed.wake();
    const replaced = contenders.enter('lock:a', 'token-2', '/locks/lock:a', 1);
    contenders.enter('lock:a', 'token-2', '/locks/lock:a', 2);
    replaced.wake();
    const forgotten = contenders.enter('lock:a', 'token-3', '/locks/lock:a', 1);
    contenders.forget(forgotten);
    forgotten.wake();
    expect(events).toEqual([]);
  });

  it('wakes the waiters of an expired session, to line up again, and forgets those that left', () => {
    const { contenders, heard } = wired();
    const { events } = heard('lock:a');
    const waiting = contenders.enter('lock:a', 'token-1', '/locks/lock:a', 1);
    const left = contenders.enter('lock:a', 'token-2', '/locks/lock:a', 1);
    left.departed = true;
    contenders.sessionExpired();
    expect(events).toEqual([{ type: 'turn', token: 'token-1' }]);
    expect(waiting.session).toBe(-1);
    expect(contenders.get('token-1')).toBe(waiting);
    expect(contenders.get('token-2')).toBeUndefined();
  });

  it('stops telling a listener once it unsubscribed', () => {
    const { contenders, heard } = wired();
    const { events, stop } = heard('lock:a');
    const contender = contenders.enter('lock:a', 'token-1', '/locks/lock:a', 1);
    stop();
    contender.wake();
    expect(events).toEqual([]);
  });
});
