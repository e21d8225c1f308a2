import { ACQUIRE_SCRIPT } from '../../src/store/redis/scripts/acquire.script.js';
import { CLAIM_SCRIPT } from '../../src/store/redis/scripts/claim.script.js';
import { FENCED_WRITE_SCRIPT } from '../../src/store/redis/scripts/fenced-write.script.js';
import { FORCE_RELEASE_SCRIPT } from '../../src/store/redis/scripts/force-release.script.js';
import { INSPECT_SCRIPT } from '../../src/store/redis/scripts/inspect.script.js';
import { SHARED_FORCE_RELEASE_SCRIPT } from '../../src/store/redis/scripts/shared/shared-force-release.script.js';
import { RELEASE_SCRIPT } from '../../src/store/redis/scripts/release.script.js';
import { RENEW_SCRIPT } from '../../src/store/redis/scripts/renew.script.js';
import { SHARED_ACQUIRE_SCRIPT } from '../../src/store/redis/scripts/shared/shared-acquire.script.js';
import { TRANSFER_SCRIPT } from '../../src/store/redis/scripts/transfer.script.js';
import { kindConflict } from '../../src/store/lock-kind.js';

/** A fencing token as the scripts issue them: the server clock in µs, beyond 2^32. */
const TOKEN = 1_795_000_000_123_456;

/**
 * Each reply as ioredis hands it over by default, and as a client configured with
 * `stringNumbers` does (integers as strings).
 */
const both = (reply: unknown[]): [string, unknown[]][] => [
  ['numbers', reply],
  ['string numbers', reply.map((entry) => (typeof entry === 'number' ? String(entry) : entry))],
];

describe('the Lua scripts’ replies', () => {
  describe.each(both([1, TOKEN]))('acquire, given %s', (_, reply) => {
    it('reads {1, token} as the lock with its fencing token', () => {
      expect(ACQUIRE_SCRIPT.decode(reply)).toEqual({ acquired: true, fencingToken: TOKEN });
    });
  });

  describe.each([
    ...both([0, 1234]).map(([how, reply]) => [how, reply, 1234] as const),
    ...both([0, -2]).map(([how, reply]) => [`${how}, no holder left`, reply, -2] as const),
  ])('acquire, given %s', (_, reply, pttl) => {
    it('reads {0, pttl} as a refusal with the holder’s remaining time', () => {
      expect(ACQUIRE_SCRIPT.decode(reply)).toEqual({ acquired: false, pttl });
    });
  });

  describe.each(both([0, 1234, -1, 800]))('acquire, given %s', (_, reply) => {
    it('reads {0, pttl, -1, window} as a throttle’s refusal', () => {
      expect(ACQUIRE_SCRIPT.decode(reply)).toEqual({
        acquired: false,
        pttl: 1234,
        windowLeft: 800,
      });
    });
  });

  describe.each(both([0, 1234, 800]))('a semaphore or read-write attempt, given %s', (_, reply) => {
    it('reads {0, pttl, window} as a refusal by throttles only', () => {
      expect(SHARED_ACQUIRE_SCRIPT.decode(reply)).toEqual({
        acquired: false,
        pttl: 1234,
        windowLeft: 800,
      });
    });
  });

  describe.each(both([1, TOKEN]))('a semaphore or read-write attempt, given %s', (_, reply) => {
    it('reads {1, token} as a permit with its fencing token', () => {
      expect(SHARED_ACQUIRE_SCRIPT.decode(reply)).toEqual({ acquired: true, fencingToken: TOKEN });
    });
  });

  describe.each(both([0, 1234]))(
    'a refused semaphore or read-write attempt, given %s',
    (_, reply) => {
      it('reads {0, pttl} as a refusal, and {2, value} as the key held as another kind', () => {
        expect(SHARED_ACQUIRE_SCRIPT.decode(reply)).toEqual({ acquired: false, pttl: 1234 });
        expect(SHARED_ACQUIRE_SCRIPT.decode([reply[0] === 0 ? 2 : '2', '#s3'])).toEqual({
          acquired: false,
          heldAs: '#s3',
        });
      });
    },
  );

  it.each([
    ['#s3', 's5.', 'a semaphore of limit 3', 'a semaphore of limit 5'],
    ['#rw', 's5.', 'a read-write lock', 'a semaphore of limit 5'],
    ['0123456789abcdef0123456789abcdef', 'r.', 'a mutex', 'a read-write lock (read)'],
    ['#s2', 'w.', 'a semaphore of limit 2', 'a read-write lock (write)'],
  ])(
    'names what a key held as %s is, for a caller whose token begins %s',
    (heldAs, tag, held, asked) => {
      expect(kindConflict('k', `${tag}00`, heldAs)).toMatchObject({
        key: 'k',
        held,
        asked,
      });
    },
  );

  describe.each(both([1, TOKEN]))('release, given %s', (_, reply) => {
    it('reads {1, token} as released and handed to a successor with that fencing token', () => {
      expect(RELEASE_SCRIPT.decode(reply)).toEqual({
        released: true,
        successorFencingToken: TOKEN,
      });
    });
  });

  it.each([
    ...both([1, 0]).map(([how, reply]) => [how, reply, true] as const),
    ...both([0, 0]).map(([how, reply]) => [how, reply, false] as const),
  ])(
    'release reads {1, 0} as released and {0, 0} as not held, given %s: %j',
    (_, reply, released) => {
      expect(RELEASE_SCRIPT.decode(reply)).toEqual({ released });
    },
  );

  it.each(both([1, 0, 0, 1]))('renew reads one flag per key, given %s', (_, reply) => {
    expect(RENEW_SCRIPT.decode(reply)).toEqual([true, false, false, true]);
    expect(RENEW_SCRIPT.decode([])).toEqual([]);
  });

  it('claim reads 1 as taken and 0 as not free', () => {
    expect(CLAIM_SCRIPT.decode(1)).toBe(true);
    expect(CLAIM_SCRIPT.decode('1')).toBe(true);
    expect(CLAIM_SCRIPT.decode(0)).toBe(false);
    expect(CLAIM_SCRIPT.decode('0')).toBe(false);
  });

  it('the guarded write reads {1, token} as written and {0, highest} as refused', () => {
    // The script answers the token it wrote and the highest one it saw as strings.
    expect(FENCED_WRITE_SCRIPT.decode([1, String(TOKEN)])).toEqual({ written: true });
    expect(FENCED_WRITE_SCRIPT.decode([0, String(TOKEN)])).toEqual({
      written: false,
      highestSeen: TOKEN,
    });
    expect(FENCED_WRITE_SCRIPT.decode(['0', '7'])).toEqual({ written: false, highestSeen: 7 });
  });

  it.each<[string, { decode(reply: unknown): unknown }, unknown]>([
    ['acquire', ACQUIRE_SCRIPT, null],
    ['acquire', ACQUIRE_SCRIPT, [1]],
    ['acquire', ACQUIRE_SCRIPT, [1, 2, 3]],
    ['acquire', ACQUIRE_SCRIPT, [0, 2, 3, 4, 5]],
    ['acquire', ACQUIRE_SCRIPT, [1, 2, 3, 4]],
    ['acquire', ACQUIRE_SCRIPT, [0, 2, 'x']],
    ['acquire', ACQUIRE_SCRIPT, [1, 'OK']],
    ['acquire', ACQUIRE_SCRIPT, [1, '']],
    ['acquire', ACQUIRE_SCRIPT, [1, 1.5]],
    ['release', RELEASE_SCRIPT, 'OK'],
    ['release', RELEASE_SCRIPT, [null, 0]],
    ['renew', RENEW_SCRIPT, 1],
    ['renew', RENEW_SCRIPT, [1, 'x']],
    ['claim', CLAIM_SCRIPT, [1]],
    ['the guarded write', FENCED_WRITE_SCRIPT, [0, 'NaN']],
  ])('%s refuses a reply the script never gives: %j', (_, script, reply) => {
    expect(() => script.decode(reply)).toThrow(/^Redis answered .* where the script returns /);
  });

  describe.each(both(['#s2', 3, 's2.a@one', 1500, TOKEN, 's2.b@two', 20, '0']))(
    'inspect, given %s',
    (_, reply) => {
      it('reads a triple per holder, a fencing token of 0 as none recorded', () => {
        expect(INSPECT_SCRIPT.decode(reply)).toEqual({
          holders: [
            { token: 's2.a@one', ttlMs: 1500, fencingToken: TOKEN },
            { token: 's2.b@two', ttlMs: 20 },
          ],
          waiting: 3,
        });
      });
    },
  );

  it('refuses an inspect reply that is not whole triples', () => {
    expect(() => INSPECT_SCRIPT.decode(['x', 0, 'x', 10])).toThrow(TypeError);
    expect(() => INSPECT_SCRIPT.decode('OK')).toThrow(TypeError);
  });

  describe.each(both([1, 2]))('a forced release, given %s', (_, reply) => {
    it('reads {1, n} as n holders evicted, {2, value} as the key held as the other kind', () => {
      for (const script of [FORCE_RELEASE_SCRIPT, SHARED_FORCE_RELEASE_SCRIPT]) {
        expect(script.decode(reply)).toEqual({ evicted: 2 });
        expect(script.decode([reply[0] === 1 ? 2 : '2', '#rw'])).toEqual({ heldAs: '#rw' });
        expect(() => script.decode([1])).toThrow(TypeError);
      }
    });
  });

  describe.each(both([0, 1, 2]))('a transfer, given %s', (_, replies) => {
    it('reads 1 as moved, 0 as gone, 2 as held with another fencing token', () => {
      expect(replies.map((reply) => TRANSFER_SCRIPT.decode(reply))).toEqual([
        'gone',
        'transferred',
        'fence-mismatch',
      ]);
      expect(() => TRANSFER_SCRIPT.decode(3)).toThrow(TypeError);
    });
  });
});
