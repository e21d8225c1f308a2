import { jest } from '@jest/globals';
import { Contender, type Contenders } from '../../src/store/zookeeper/contender.js';
import { Departures } from '../../src/store/zookeeper/departures.js';
import type { LockNodes } from '../../src/store/zookeeper/lock-nodes.js';
import type { ZooKeeperNodes } from '../../src/store/zookeeper/zookeeper-nodes.js';
import type { ZooKeeperSession } from '../../src/store/zookeeper/zookeeper-session.js';

/**
 * A departure that fails is tried again while the session lives; once the store has closed,
 * the session has ended and its nodes with it, and nothing is tried again: a retry left
 * running would fail every 200 ms (the session is closed) for as long as the process lives.
 */
describe('ZooKeeper departures after the store closed', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('leaves no retry behind for a departure that fails once the store is closed', async () => {
    const closed = () => Promise.reject(new Error('the ZooKeeper session is closed'));
    const departures = new Departures(
      { current: 1 } as unknown as ZooKeeperSession,
      { remove: closed, children: closed } as unknown as ZooKeeperNodes,
      { removeIfEmpty: () => Promise.resolve() } as unknown as LockNodes,
      { forget: () => undefined, isCurrent: () => true } as unknown as Contenders,
    );
    const contender = new Contender('k', 'token', '/locks/k', 1, () => undefined);
    contender.name = 'token-0000000001';

    departures.close();
    await expect(departures.leave(contender)).rejects.toThrow('session is closed');
    expect(contender.departed).toBe(true);
    expect(jest.getTimerCount()).toBe(0);
  });
});
