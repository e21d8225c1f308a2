import { newToken } from '../../src/engine/token.js';
import { kindOf, kindOfToken, type LockKind } from '../../src/store/lock-kind.js';

describe('lock kinds', () => {
  const kinds: LockKind[] = [
    kindOf({}),
    kindOf({ limit: 7 }),
    kindOf({ mode: 'read' }),
    kindOf({ mode: 'write' }),
  ];
  const [mutex, semaphore, read, write] = kinds;

  it('follow from limit and mode: limit 1 is the mutex', () => {
    expect(kindOf({})).toMatchObject({ type: 'mutex' });
    expect(kindOf({ limit: 1 })).toMatchObject({ type: 'mutex' });
    expect(kindOf({ limit: 7 })).toMatchObject({ type: 'semaphore', limit: 7 });
    expect(kindOf({ mode: 'read' })).toMatchObject({ type: 'read' });
    expect(kindOf({ mode: 'write' })).toMatchObject({ type: 'write' });
  });

  it.each(kinds.map((kind) => [kind.description, kind] as const))(
    'are read back from the tokens made for them (%s)',
    (_, kind) => {
      const token = newToken(kind.tag);
      expect(kindOfToken(token)).toBe(kind);
      expect(kindOfToken(token).shared).toBe(kind.type !== 'mutex');
    },
  );

  it('leave mutex tokens as they were: 32 hex characters', () => {
    expect(newToken(mutex.tag)).toMatch(/^[0-9a-f]{32}$/);
  });

  it('let nested work reuse an exclusive hold, or a shared one of its own kind only', () => {
    for (const asked of kinds) {
      expect(mutex.covers(asked)).toBe(true);
      expect(write.covers(asked)).toBe(true);
    }
    expect(read.covers(read)).toBe(true);
    expect(read.covers(write)).toBe(false);
    expect(read.covers(mutex)).toBe(false);
    expect(semaphore.covers(semaphore)).toBe(true);
    expect(semaphore.covers(kindOf({ limit: 3 }))).toBe(false);
    expect(semaphore.covers(mutex)).toBe(false);
    expect(semaphore.covers(read)).toBe(false);
  });

  it('share a key only within their family', () => {
    expect(read.family).toBe(write.family);
    expect(new Set([mutex, semaphore, read, kindOf({ limit: 3 })].map((k) => k.family)).size).toBe(
      4,
    );
  });

  it('say whom they let hold beside them', () => {
    expect(kindOf({ limit: 2 }).admits([kindOf({ limit: 2 })])).toBe(true);
    expect(kindOf({ limit: 2 }).admits([kindOf({ limit: 2 }), kindOf({ limit: 2 })])).toBe(false);
    expect(read.admits([read, read])).toBe(true);
    expect(read.admits([read, write])).toBe(false);
    expect(write.admits([])).toBe(true);
    expect(write.admits([read])).toBe(false);
  });

  it('say what a waiter waits for among those ahead of it', () => {
    expect(write.standing([])).toEqual({ holds: true });
    expect(write.standing([read, read])).toEqual({ holds: false, behind: 1 });
    expect(read.standing([read, read])).toEqual({ holds: true });
    expect(read.standing([write, read, write, read])).toEqual({ holds: false, behind: 2 });
    expect(kindOf({ limit: 2 }).standing([kindOf({ limit: 2 })])).toEqual({ holds: true });
    expect(kindOf({ limit: 2 }).standing([kindOf({ limit: 2 }), kindOf({ limit: 2 })])).toEqual({
      holds: false,
    });
  });

  it('take several permits of a semaphore as one hold, read back from its token', () => {
    const three = kindOf({ limit: 5, permits: 3 });
    const one = kindOf({ limit: 5 });
    expect(three).toMatchObject({ type: 'semaphore', limit: 5, permits: 3, family: one.family });
    expect(kindOfToken(newToken(three.tag))).toBe(three);
    expect(kindOf({ limit: 5, permits: 1 })).toBe(one);
    expect(three.covers(one)).toBe(true);
    expect(one.covers(three)).toBe(false);
  });

  it('count permits, not holders, and let nobody overtake a larger request ahead', () => {
    const [one, two, three] = [1, 2, 3].map((permits) => kindOf({ limit: 4, permits }));
    expect(three.admits([one])).toBe(true);
    expect(three.admits([two])).toBe(false);
    expect(one.admits([three])).toBe(true);
    expect(one.admits([three, one])).toBe(false);
    expect(three.standing([two])).toEqual({ holds: false });
    // Two permits are free beside the holder of two, but a request for three waits ahead.
    expect(one.standing([two, three])).toEqual({ holds: false });
    expect(two.standing([two])).toEqual({ holds: true });
  });
});
