import { LockKeyResolutionError } from '../../src/index.js';
import { CLUSTER_SLOTS, slotOf, slotTag } from '../../src/keys/cluster-slots.js';
import {
  fenceKeyOf,
  scriptKeysOf,
  sideKeyOf,
  toDataKey,
  toRedisKey,
} from '../../src/keys/lock-keys.js';

describe('the key grammar', () => {
  it('hashes keys as Redis Cluster does', () => {
    // CRC16/XMODEM of "123456789" is 0x31C3; a hash tag is hashed alone.
    expect(slotOf('123456789')).toBe(0x31c3);
    expect(slotOf('{123456789}:anything')).toBe(0x31c3);
  });

  it('has a three-character tag without braces for every hash slot, which hashes to it', () => {
    const tags = new Set<string>();
    for (let slot = 0; slot < CLUSTER_SLOTS; slot++) {
      const tag = slotTag(slot);
      expect(tag).toMatch(/^[0-9a-zA-Z]{3}$/);
      expect(slotOf(`{${tag}}:fence`)).toBe(slot);
      tags.add(tag);
    }
    expect(tags.size).toBe(CLUSTER_SLOTS);
  });

  it('keeps every lock key beside its own keys, in its slot, with one counter per slot', () => {
    for (const key of ['order:7', '{user:1}:cart', 'a{b', 'a{b}{c}'].map((name) =>
      toRedisKey('lock:', name),
    )) {
      const [lock, fence, ...side] = scriptKeysOf(key, true);
      expect(lock).toBe(key);
      for (const other of [fence, ...side]) expect(slotOf(other)).toBe(slotOf(key));
    }
    expect(fenceKeyOf('lock:a', true)).toBe(
      fenceKeyOf(`lock:{${slotTag(slotOf('lock:a'))}}`, true),
    );
    expect(fenceKeyOf('lock:a', false)).toBe(fenceKeyOf('lock:b', false));
  });

  it('gives different keys to different roles and names, whatever the names', () => {
    const names = ['a', 'a:queue', 'a}:queue', '{a}', '{a}:queue', 'a{b', '{}a', '{a}:fenced:a'];
    names.push(...names.map((name) => `lock:${name}`), '{lock:a}:queue', '{lock:a}:fence');
    const owned = new Map<string, string>();
    const claim = (key: string, owner: string) => {
      expect([key, owned.get(key) ?? owner]).toEqual([key, owner]);
      owned.set(key, owner);
    };
    for (const name of names) {
      const lock = tryKey(() => toRedisKey('lock:', name));
      if (lock !== undefined) {
        claim(lock, `lock ${name}`);
        for (const role of ['queue', 'waiters'] as const) {
          claim(sideKeyOf(lock, role), `${role} of lock ${name}`);
        }
      }
      const data = tryKey(() => toDataKey('lock:', name));
      if (data !== undefined) {
        claim(data, `data ${name}`);
        claim(sideKeyOf(data, 'fenced'), `guard of data ${name}`);
      }
    }
    for (let slot = 0; slot < CLUSTER_SLOTS; slot += 97) {
      claim(`{${slotTag(slot)}}:fence`, `counter of slot ${slot}`);
    }
    claim(fenceKeyOf('lock:a', false), 'counter of the server');
  });

  it('takes data keys only outside the lock prefix and the library keys', () => {
    for (const resource of ['{a}:queue', '{}:fence', '{x}', 'lock:a', 'lock:', 'a}b', '']) {
      expect(() => toDataKey('lock:', resource)).toThrow(LockKeyResolutionError);
    }
    for (const resource of ['account:{42}:balance', 'lock', 'locks:a', 'a{b']) {
      expect(toDataKey('lock:', resource)).toBe(resource);
    }
  });
});

function tryKey(make: () => string): string | undefined {
  try {
    return make();
  } catch (error) {
    if (error instanceof LockKeyResolutionError) return undefined;
    throw error;
  }
}
