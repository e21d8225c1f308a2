import { hashTag } from '../../keys/hash-tag.js';

/*
 * How Redis Cluster places keys in hash slots, computed here to batch per slot and to name keys
 * that lie in a given slot (a fencing counter per slot, the keys beside a key with a hash tag).
 */

/** Number of hash slots in a Redis Cluster. */
export const CLUSTER_SLOTS = 16_384;

/** CRC16 (XMODEM) of some bytes, as Redis Cluster hashes keys. */
function crc16(bytes: Iterable<number>): number {
  let crc = 0;
  for (const byte of bytes) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++) {
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    }
  }
  return crc;
}

/**
 * The Redis Cluster hash slot of a key: CRC16 (XMODEM) of its hash tag, or of the whole key
 * when it has none, modulo 16384.
 */
export function slotOf(key: string): number {
  return crc16(Buffer.from(hashTag(key) ?? key)) % CLUSTER_SLOTS;
}

/** Characters of the slot tags: three of them name every slot. */
const TAG_CHARACTERS = Buffer.from(
  '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ',
);
/** The tags of all slots, three characters each, in slot order; built on first use. */
let slotTags: string | undefined;

/**
 * A hash tag for `slot` that begins with `start`: `start` followed by three characters chosen
 * so that the whole hashes to `slot`. The library's keys use it to lie in a given slot while
 * beginning with a given text (the key prefix, so that an ACL confined to it covers them).
 */
export function slotTag(slot: number, start = ''): string {
  slotTags ??= findSlotTags();
  const at = start === '' ? slot : slot ^ offsetOf(start);
  return start + slotTags.slice(3 * at, 3 * at + 3);
}

/** The text last given to {@link offsetOf} (most often the key prefix), and its offset. */
let lastStart = '';
let lastOffset = 0;

/**
 * What `start` adds to the slot of `start + xyz`: the CRC of `start + xyz` is that of
 * `start + "\0\0\0"` XOR that of `xyz` (see findSlotTags), and a slot is the CRC's low 14 bits.
 */
function offsetOf(start: string): number {
  if (start !== lastStart) {
    lastOffset = crc16([...Buffer.from(start), 0, 0, 0]) % CLUSTER_SLOTS;
    lastStart = start;
  }
  return lastOffset;
}

/**
 * The first tag found for each slot, among the strings of three TAG_CHARACTERS (there are
 * 14 times as many as slots). A CRC16 that starts from zero is linear (the CRC of `a XOR b` is
 * the CRC of `a` XOR the CRC of `b`), so the CRC of `xyz` is that of `x\0\0` XOR that of `y\0`
 * XOR that of `z`, each looked up: a few milliseconds, once.
 */
function findSlotTags(): string {
  const crcs = (padding: number[]) => [...TAG_CHARACTERS].map((c) => crc16([c, ...padding]));
  const [first, second, third] = [crcs([0, 0]), crcs([0]), crcs([])];
  const tags = Buffer.alloc(3 * CLUSTER_SLOTS);
  const [size, x] = [TAG_CHARACTERS.length, TAG_CHARACTERS];
  let missing = CLUSTER_SLOTS;
  for (let i = 0; i < size && missing > 0; i++) {
    for (let j = 0; j < size; j++) {
      for (let k = 0; k < size; k++) {
        const at = 3 * ((first[i] ^ second[j] ^ third[k]) % CLUSTER_SLOTS);
        if (tags[at] === 0) {
          tags.set([x[i], x[j], x[k]], at);
          missing--;
        }
      }
    }
  }
  return tags.toString('latin1');
}
