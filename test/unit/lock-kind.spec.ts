import { newToken } from '../../src/engine/token.js';
import {
  covers,
  isShared,
  kindOf,
  kindOfToken,
  tagOf,
  type LockKind,
} from '../../src/store/lock-kind.js';

describe('lock kinds', () => {
  const kinds: LockKind[] = [
    { type: 'mutex' },
    { type: 'semaphore', limit: 7 },
    { type: 'read' },
    { type: 'write' },
  ];

  it('follow from limit and mode: limit 1 is the mutex', () => {
    expect(kindOf({})).toEqual({ type: 'mutex' });
    expect(kindOf({ limit: 1 })).toEqual({ type: 'mutex' });
    expect(kindOf({ limit: 7 })).toEqual({ type: 'semaphore', limit: 7 });
    expect(kindOf({ mode: 'read' })).toEqual({ type: 'read' });
    expect(kindOf({ mode: 'write' })).toEqual({ type: 'write' });
  });

  it.each(kinds)('are read back from the tokens made for them (%o)', (kind) => {
    const token = newToken(tagOf(kind));
    expect(kindOfToken(token)).toEqual(kind);
    expect(isShared(token)).toBe(kind.type !== 'mutex');
  });

  it('leave mutex tokens as they were: 32 hex characters', () => {
    expect(newToken(tagOf({ type: 'mutex' }))).toMatch(/^[0-9a-f]{32}$/);
  });

  it('let nested work reuse an exclusive hold, or a shared one of its own kind only', () => {
    const [mutex, semaphore, read, write] = kinds;
    for (const asked of kinds) {
      expect(covers(mutex, asked)).toBe(true);
      expect(covers(write, asked)).toBe(true);
    }
    expect(covers(read, read)).toBe(true);
    expect(covers(read, write)).toBe(false);
    expect(covers(read, mutex)).toBe(false);
    expect(covers(semaphore, semaphore)).toBe(true);
    expect(covers(semaphore, { type: 'semaphore', limit: 3 })).toBe(false);
    expect(covers(semaphore, mutex)).toBe(false);
    expect(covers(semaphore, read)).toBe(false);
  });
});
