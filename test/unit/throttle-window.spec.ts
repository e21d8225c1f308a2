import { newToken, ownerMark, ownerOfToken } from '../../src/engine/token.js';
import { kindOf, kindOfToken } from '../../src/store/lock-kind.js';
import { windowAcross } from '../../src/store/redlock/redlock-refusals.js';
import {
  FENCE_AHEAD_US,
  holdForOfToken,
  sharedWindowLeft,
  throttleTag,
  windowLeftOf,
} from '../../src/store/throttle-window.js';

/** A store clock, in µs, as the fencing tokens read it. */
const NOW = 1_795_000_000_000_000;
const MS = 1_000;

describe('a throttle holder’s token', () => {
  const kinds = [
    kindOf({}),
    kindOf({ limit: 3 }),
    kindOf({ limit: 3, permits: 2 }),
    kindOf({ mode: 'read' }),
    kindOf({ mode: 'write' }),
  ];

  it.each(kinds.map((kind) => [kind.description, kind] as const))(
    'carries its holdFor after the tag of its kind, which still reads back (%s)',
    (_, kind) => {
      const token = newToken(kind.tag + throttleTag(5_000), ownerMark('api-1'));
      expect(token.startsWith(`${kind.tag}h5000.`)).toBe(true);
      expect(holdForOfToken(token)).toBe(5_000);
      expect(kindOfToken(token)).toBe(kind);
      expect(ownerOfToken(token)).toBe('api-1');
    },
  );

  it.each(kinds.map((kind) => [kind.description, kind] as const))(
    'carries nothing without holdFor, as tokens made before the tag (%s)',
    (_, kind) => {
      const token = newToken(kind.tag + throttleTag(undefined), ownerMark('api-1'));
      expect(token).toMatch(new RegExp(`^${kind.tag.replace('.', '\\.')}[0-9a-f]{32}@api-1$`));
      expect(holdForOfToken(token)).toBeUndefined();
    },
  );

  it('is not read into a random part, an owner or a tag of another place', () => {
    expect(holdForOfToken('0123456789abcdef0123456789abcdef@h5000.x')).toBeUndefined();
    expect(holdForOfToken('x.h5000.0123456789abcdef0123456789abcdef')).toBeUndefined();
    expect(holdForOfToken('h.0123456789abcdef0123456789abcdef')).toBeUndefined();
  });
});

describe('what is left of a throttle’s window', () => {
  const throttle = (holdFor: number) => `${throttleTag(holdFor)}0123456789abcdef0123456789abcdef`;

  it('counts holdFor from the grant that the fencing token dates', () => {
    expect(windowLeftOf(throttle(5_000), NOW - 1_200 * MS, NOW)).toBe(3_800);
    expect(windowLeftOf(throttle(5_000), NOW, NOW)).toBe(5_000);
    // A part of a ms left is a whole one: a retry never comes before the window closes.
    expect(windowLeftOf(throttle(5_000), NOW - 4_999_500, NOW)).toBe(1);
  });

  it('is never more than holdFor, from a fencing token a little ahead of the clock', () => {
    expect(windowLeftOf(throttle(5_000), NOW + 300 * MS, NOW)).toBe(5_000);
    expect(windowLeftOf(throttle(5_000), NOW + FENCE_AHEAD_US, NOW)).toBe(5_000);
  });

  it('is none from a fencing token too far ahead of the clock to date the grant', () => {
    expect(windowLeftOf(throttle(5_000), NOW + FENCE_AHEAD_US + 1, NOW)).toBeUndefined();
  });

  it('is none once the work outlasted the window: a plain conflict', () => {
    expect(windowLeftOf(throttle(5_000), NOW - 5_000 * MS, NOW)).toBeUndefined();
    expect(windowLeftOf(throttle(5_000), NOW - 60_000 * MS, NOW)).toBeUndefined();
  });

  it('is none for a holder without holdFor, or without a fencing token yet', () => {
    expect(windowLeftOf('0123456789abcdef0123456789abcdef', NOW, NOW)).toBeUndefined();
    expect(windowLeftOf(throttle(5_000), undefined, NOW)).toBeUndefined();
  });

  it('of several holders, is open only while every one’s is, until the soonest closes', () => {
    expect(sharedWindowLeft([3_000, 1_200, 4_000])).toBe(1_200);
    expect(sharedWindowLeft([3_000, undefined])).toBeUndefined();
    expect(sharedWindowLeft([])).toBeUndefined();
  });
});

describe('a refusal across RedLock masters', () => {
  it('is a throttle’s only when the masters with a window leave no majority free', () => {
    // 3 masters, a majority of 2: one window leaves two masters that may be free.
    expect(windowAcross([900], 3, 2)).toBeUndefined();
    expect(windowAcross([900, 400], 3, 2)).toBe(400);
    expect(windowAcross([900, 400, 700], 3, 2)).toBe(700);
    // 5 masters, a majority of 3: three windows must see one close, four two.
    expect(windowAcross([500, 100], 5, 3)).toBeUndefined();
    expect(windowAcross([500, 100, 300], 5, 3)).toBe(100);
    expect(windowAcross([500, 100, 300, 200], 5, 3)).toBe(200);
  });
});
