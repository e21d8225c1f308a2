import { LockOptionsError } from '../../src/index.js';
import type { ResolvedAcquireOptions } from '../../src/options/lock-options.interface.js';
import { refuseUnsupported, type LockStoreCapabilities } from '../../src/store/capabilities.js';

const mutex: ResolvedAcquireOptions = { ttl: 1_000, waitTimeout: 0, watchdog: true };
const everything: LockStoreCapabilities = {
  backend: 'Redis',
  queueing: true,
  throttle: true,
  kinds: true,
  keepAlive: 'ttl',
  handles: true,
};
const session: LockStoreCapabilities = {
  ...everything,
  backend: 'ZooKeeper',
  throttle: false,
  keepAlive: 'session',
  handles: false,
  why: { throttle: ': no throttle here' },
};
const mutexOnly: LockStoreCapabilities = { ...everything, backend: 'RedLock', kinds: false };

/** The option named by the error `refuseUnsupported` throws, or undefined when it accepts. */
function refused(options: Partial<ResolvedAcquireOptions>, capabilities: LockStoreCapabilities) {
  try {
    refuseUnsupported({ ...mutex, ...options }, capabilities, 'Jobs.run');
    return undefined;
  } catch (error) {
    expect(error).toBeInstanceOf(LockOptionsError);
    const { option, message } = error as LockOptionsError;
    expect(message).toContain(capabilities.backend);
    expect(message).toContain('Jobs.run');
    return option;
  }
}

describe('what a store declares it can do', () => {
  it('accepts every option on a store that can do everything', () => {
    for (const options of [{ holdFor: 500 }, { watchdog: false }, { limit: 3 }, { mode: 'read' }]) {
      expect(refused(options as Partial<ResolvedAcquireOptions>, everything)).toBeUndefined();
    }
  });

  it('refuses a throttle and an unwatched lock where a hold lives as long as a session', () => {
    expect(refused({ holdFor: 500 }, session)).toBe('holdFor');
    expect(refused({ watchdog: false }, session)).toBe('watchdog');
    expect(refused({ limit: 3 }, session)).toBeUndefined();
  });

  it('refuses semaphores and read-write locks, a writer too, where the store has no kinds', () => {
    expect(refused({ limit: 3 }, mutexOnly)).toBe('limit');
    expect(refused({ mode: 'read' }, mutexOnly)).toBe('mode');
    expect(refused({ mode: 'write' }, mutexOnly)).toBe('mode');
    expect(refused({ holdFor: 500 }, mutexOnly)).toBeUndefined();
  });

  it('refuses a throttle beside a semaphore or a read-write lock where a window closes the whole key', () => {
    const mutexThrottle: LockStoreCapabilities = { ...everything, throttle: 'mutex' };
    expect(refused({ holdFor: 500 }, mutexThrottle)).toBeUndefined();
    expect(refused({ holdFor: 500, limit: 1 }, mutexThrottle)).toBeUndefined();
    expect(refused({ holdFor: 500, limit: 3 }, mutexThrottle)).toBe('holdFor');
    expect(refused({ holdFor: 500, mode: 'write' }, mutexThrottle)).toBe('holdFor');
    expect(refused({ limit: 3 }, mutexThrottle)).toBeUndefined();
  });

  it('says why, when the store says', () => {
    expect(() => refuseUnsupported({ ...mutex, holdFor: 1 }, session)).toThrow(
      'expected nothing with ZooKeeper: no throttle here',
    );
  });
});
