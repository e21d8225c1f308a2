import { hashTag } from '../../src/keys/hash-tag.js';
import { CLUSTER_SLOTS, slotOf, slotTag } from '../../src/store/redis/cluster-slots.js';

/** What `CLUSTER KEYSLOT` answers for each key (asked of a Redis 7.0 cluster node). */
const KEYSLOTS: [key: string, slot: number][] = [
  ['foo', 12182],
  ['somekey', 11058],
  ['foo{hash_tag}', 2515],
  ['bar{hash_tag}', 2515],
  ['{user1000}.following', 3443],
  ['{user1000}.followers', 3443],
  ['user1000', 3443],
  ['', 0],
  ['{}', 15257],
  ['{}user', 12192],
  ['foo{}{bar}', 8363],
  ['foo{{bar}}zap', 4015],
  ['foo{bar}{zap}', 5061],
  ['{{}}', 4092],
  ['a}b{c}', 7365],
  ['é', 10180],
];

describe('Redis Cluster hash slots', () => {
  it.each(KEYSLOTS)('puts %j in slot %i, as CLUSTER KEYSLOT does', (key, slot) => {
    expect(slotOf(key)).toBe(slot);
  });

  it('hashes only the first non-empty "{…}" of a key', () => {
    expect(hashTag('{user1000}.following')).toBe('user1000');
    expect(hashTag('foo{{bar}}zap')).toBe('{bar');
    expect(hashTag('foo{bar}{zap}')).toBe('bar');
    expect(hashTag('a}b{c}')).toBe('c');
    for (const untagged of ['', 'foo', '{}', '{}user', 'foo{}{bar}', 'a{b', 'a}b']) {
      expect(hashTag(untagged)).toBeUndefined();
    }
  });

  it('names each slot with a tag that hashes to it, whatever surrounds the tag', () => {
    for (const slot of [0, 1, 2515, 3443, 12182, CLUSTER_SLOTS - 1]) {
      const tag = slotTag(slot);
      expect(slotOf(tag)).toBe(slot);
      expect(slotOf(`{${tag}}:fence`)).toBe(slot);
      expect(slotOf(`{${tag}}${tag}anything`)).toBe(slot);
    }
  });
});
