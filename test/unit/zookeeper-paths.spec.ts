import { LockError } from '../../src/index.js';
import { escapeKey, inLine, lockPath } from '../../src/store/zookeeper/zookeeper-paths.js';
import { fencingTokenOf } from '../../src/store/zookeeper/zookeeper-session.js';

describe('ZooKeeper paths and fencing tokens', () => {
  it('escapes a key one-to-one into one node name ZooKeeper accepts', () => {
    const keys = ['lock:a/b', 'lock:a%2Fb', '.', '..', 'a.b', 'ü', '\u0000', ' ', 'zookeeper'];
    const names = keys.map(escapeKey);
    expect(new Set(names).size).toBe(keys.length);
    for (const name of names) {
      expect(name).toMatch(/^[A-Za-z0-9_:%-]+$/);
      expect(name).not.toMatch(/^\.\.?$/);
      // One-to-one: percent-decoding gives the key back.
      expect(keys).toContain(decodeURIComponent(name));
    }
    expect(escapeKey('lock:order:42')).toBe('lock:order:42');
    expect(lockPath('/locks', 'lock:a/b')).toBe('/locks/lock:a%2Fb');
  });

  it('orders contenders by sequence number, whatever their tokens', () => {
    expect(inLine(['ff-0000000010', '00-0000000002', 'aa-0000000009'])).toEqual([
      '00-0000000002',
      'aa-0000000009',
      'ff-0000000010',
    ]);
  });

  it('takes the creation zxid as the fencing token, and refuses one beyond the safe integers', () => {
    const stat = (zxid: bigint) => {
      const czxid = Buffer.alloc(8);
      czxid.writeBigUInt64BE(zxid);
      return { czxid };
    };
    expect(fencingTokenOf('k', stat(0x2_0000_0005n))).toBe(0x2_0000_0005);
    expect(fencingTokenOf('k', stat(BigInt(Number.MAX_SAFE_INTEGER)))).toBe(
      Number.MAX_SAFE_INTEGER,
    );
    expect(() => fencingTokenOf('k', stat(BigInt(Number.MAX_SAFE_INTEGER) + 1n))).toThrow(
      LockError,
    );
  });
});
