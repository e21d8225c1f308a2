import { LockKeyResolutionError } from '../../src/index.js';
import { ownerMark } from '../../src/engine/token.js';
import { CLUSTER_SLOTS, slotOf, slotTag } from '../../src/store/redis/cluster-slots.js';
import { lockIdsOf, leaderIdOf, toDataKey, toStoreKey } from '../../src/keys/lock-keys.js';
import {
  fenceKeyOf,
  guardKeyOf,
  scriptKeysOf,
  sharedScriptKeysOf,
  sideKeyOf,
  turnChannelOf,
  turnChannelsOf,
} from '../../src/store/redis/redis-keys.js';

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
    for (const key of ['order:7', '{user:1}:cart', 'a{b', 'a{b}{c}', 'a}b{c}'].map((name) =>
      toStoreKey('lock:', name),
    )) {
      const [lock, fence, ...side] = sharedScriptKeysOf(key, 'lock:', true);
      expect(lock).toBe(key);
      for (const other of [fence, ...side, ...scriptKeysOf(key, 'lock:', true)]) {
        expect([other, slotOf(other)]).toEqual([other, slotOf(key)]);
      }
    }
    expect(fenceKeyOf('lock:a', 'lock:', true)).toBe(
      fenceKeyOf(`lock:{${slotTag(slotOf('lock:a'))}}`, 'lock:', true),
    );
    expect(fenceKeyOf('lock:a', 'lock:', false)).toBe(fenceKeyOf('lock:b', 'lock:', false));
  });

  it("keeps each instance's turn channel of a lock in the lock's slot, under the prefix, apart from every other channel", () => {
    const names = ['order:7', '{user:1}:cart', 'a{b', 'a{b}{c}', 'a}b{c}', 'a@b', '{x@y}:z'];
    const keys = [
      ...names.map((name) => toStoreKey('lock:', name)),
      leaderIdOf('lock:', 'relay').key,
    ];
    const marks = [ownerMark('host:1'), ownerMark('host:12'), ownerMark('{ü@}')];
    const channels = new Map<string, string>();
    for (const key of keys) {
      channels.set(key, `channel of ${key}`);
      for (const mark of marks) {
        const channel = turnChannelOf(key, mark);
        // What the scripts build: the beginning they are given, and the token's mark.
        expect(channel).toBe(turnChannelsOf(key) + mark);
        expect([channel, slotOf(channel), channel.startsWith('{lock:')]).toEqual([
          channel,
          slotOf(key),
          true,
        ]);
        expect([channel, channels.get(channel)]).toEqual([channel, undefined]);
        channels.set(channel, `turns of ${mark} on ${key}`);
      }
    }
    expect(turnChannelOf('lock:order:7', '@host:1')).toBe('{lock:order:7}:turn@host:1');
  });

  it('has a tag for every slot after any text, which hashes to it', () => {
    for (const start of ['', 'lock:', 'billing:lock:', 'ünï:cödé:', 'x'.repeat(300)]) {
      for (let slot = 0; slot < CLUSTER_SLOTS; slot += 61) {
        const tag = slotTag(slot, start);
        expect(tag).toMatch(/^[^{}]*[0-9a-zA-Z]{3}$/);
        expect(tag.startsWith(start)).toBe(true);
        expect([tag, slotOf(`{${tag}}:fence`)]).toEqual([tag, slot]);
      }
    }
  });

  it("keeps every key of a lock under its prefix, and no two prefixes' keys in common", () => {
    const names = ['order:7', '{user:1}:cart', 'a{b', 'a{b}{c}', 'a}b{c}', '{x}{}'];
    const keysOf = (prefix: string) =>
      names.flatMap((name) => {
        const key = toStoreKey(prefix, name);
        const leadership = leaderIdOf(prefix, name).key;
        return [true, false].flatMap((perSlot) => [
          ...scriptKeysOf(leadership, prefix, perSlot),
          ...sharedScriptKeysOf(leadership, prefix, perSlot),
          ...scriptKeysOf(key, prefix, perSlot),
          ...sharedScriptKeysOf(key, prefix, perSlot),
        ]);
      });
    const [billing, shipping] = [keysOf('billing:lock:'), keysOf('shipping:lock:')];
    for (const [prefix, keys] of [
      ['billing:lock:', billing],
      ['shipping:lock:', shipping],
    ] as const) {
      for (const key of keys) {
        expect([key, key.startsWith(prefix) || key.startsWith(`{${prefix}`)]).toEqual([key, true]);
      }
    }
    expect(billing.filter((key) => shipping.includes(key))).toEqual([]);
  });

  it('gives different keys to different roles and names, whatever the names', () => {
    const names = ['a', 'a:queue', 'a}:queue', '{a}', '{a}:queue', 'a{b', '{}a', '{a}:fenced:a'];
    // The tag that the side keys of `lock:{a}` take, as a name of its own.
    names.push(slotTag(slotOf('{a}'), 'lock:').slice('lock:'.length));
    names.push(...names.map((name) => `lock:${name}`), '{lock:a}:queue', '{lock:a}:fence');
    const owned = new Map<string, string>();
    const claim = (key: string, owner: string) => {
      expect([key, owned.get(key) ?? owner]).toEqual([key, owner]);
      owned.set(key, owner);
    };
    for (const name of names) {
      const leadership = tryKey(() => leaderIdOf('lock:', name).key);
      if (leadership !== undefined) {
        claim(leadership, `leadership ${name}`);
        for (const role of ['queue', 'waiters'] as const) {
          claim(sideKeyOf(leadership, role), `${role} of leadership ${name}`);
        }
      }
      const lock = tryKey(() => toStoreKey('lock:', name));
      if (lock !== undefined) {
        claim(lock, `lock ${name}`);
        for (const role of ['queue', 'waiters', 'holders', 'line', 'places'] as const) {
          claim(sideKeyOf(lock, role), `${role} of lock ${name}`);
        }
      }
      const data = tryKey(() => toDataKey('lock:', name));
      if (data !== undefined) {
        claim(data, `data ${name}`);
        claim(guardKeyOf(data), `guard of data ${name}`);
      }
    }
    for (let slot = 0; slot < CLUSTER_SLOTS; slot += 97) {
      claim(`{${slotTag(slot, 'lock:')}}:fence`, `counter of slot ${slot}`);
    }
    claim(fenceKeyOf('lock:a', 'lock:', false), 'counter of the server');
  });

  it('keeps leader elections where no lock key reaches, beside their own keys, in their slot', () => {
    for (const name of ['relay', 'a:b', '{user:1}:cart', 'a{b', 'x'.repeat(1024)]) {
      const { key, name: reported } = leaderIdOf('lock:', name);
      expect([key, reported]).toEqual([`lock:{}leader:${name}`, `leader:${name}`]);
      // No lock name, data key or library key reaches it.
      expect(() => toStoreKey('lock:', key.slice('lock:'.length))).toThrow(LockKeyResolutionError);
      expect(() => toDataKey('lock:', key)).toThrow(LockKeyResolutionError);
      for (const other of [
        ...scriptKeysOf(key, 'lock:', true),
        ...sharedScriptKeysOf(key, 'lock:', true),
      ]) {
        expect([other, slotOf(other), other.startsWith('{lock:') || other === key]).toEqual([
          other,
          slotOf(key),
          true,
        ]);
      }
    }
    for (const name of ['', 'x'.repeat(1025), '\ud800', 'a}b', '{}', 7]) {
      expect(() => leaderIdOf('lock:', name)).toThrow(LockKeyResolutionError);
    }
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

describe('the keys of a lock on several keys', () => {
  it('are taken once each, in the order of their full keys, whatever order they were named in', () => {
    const ids = lockIdsOf('lock:', ['b', 'a:2', 'b', 'a:10']);
    expect(ids).toEqual([
      { name: 'a:10', key: 'lock:a:10' },
      { name: 'a:2', key: 'lock:a:2' },
      { name: 'b', key: 'lock:b' },
    ]);
    expect(lockIdsOf('lock:', ['a:2', 'a:10', 'b'])).toEqual(ids);
  });

  it('refuse an empty list, and any key that one key would refuse', () => {
    expect(() => lockIdsOf('lock:', [])).toThrow(LockKeyResolutionError);
    expect(() => lockIdsOf('lock:', ['a', ''])).toThrow(LockKeyResolutionError);
    expect(() => lockIdsOf('lock:', ['a', 42])).toThrow(LockKeyResolutionError);
  });
});
