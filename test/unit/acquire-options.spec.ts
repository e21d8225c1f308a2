import type { AcquireOptions } from '../../src/index.js';
import { checkTtl } from '../../src/options/option-checks.js';
import { resolveAcquireOptions } from '../../src/options/resolve-acquire-options.js';
import type { LockStoreCapabilities } from '../../src/store/capabilities.js';
import { expectOptionError } from '../support/option-error.js';

const MAX = 2 ** 31 - 1;
const defaults = { ttl: 30_000, waitTimeout: 10_000, watchdog: true };
const everything: LockStoreCapabilities = {
  backend: 'Redis',
  queueing: true,
  throttle: true,
  kinds: true,
  keepAlive: 'ttl',
  handles: true,
};
const resolve = (options: unknown, where?: string) =>
  resolveAcquireOptions(options as AcquireOptions, defaults, everything, where);

describe('acquire options', () => {
  it('are the defaults themselves when none are given', () => {
    expect(resolve(undefined)).toBe(defaults);
    expect(resolve({})).toEqual({ ...defaults, holdFor: undefined, signal: undefined });
  });

  it('override each default they name, and keep the others', () => {
    const signal = new AbortController().signal;
    expect(resolve({ ttl: 10, holdFor: 1_000, signal })).toEqual({
      ...defaults,
      ttl: 10,
      holdFor: 1_000,
      signal,
    });
    expect(resolve({ waitTimeout: 0, watchdog: false })).toMatchObject({
      waitTimeout: 0,
      watchdog: false,
    });
    expect(resolve({ waitTimeout: Infinity, ttl: MAX })).toMatchObject({
      waitTimeout: Infinity,
      ttl: MAX,
    });
  });

  const rules: [string, unknown, string, string][] = [
    ['options that are not an object', 'fast', 'options', 'expected an object, got "fast"'],
    ['null options', null, 'options', 'expected an object, got null'],
    [
      'an unknown option',
      { ttl: 100, tll: 100 },
      'tll',
      'expected no such option (known: ttl, waitTimeout, watchdog, holdFor, signal, limit, permits, mode, label), got 100',
    ],
    ...[9, 1.5, Infinity, '1s'].map((ttl): [string, unknown, string, string] => [
      `ttl ${String(ttl)}`,
      { ttl },
      'ttl',
      `expected an integer number of milliseconds from 10 to ${MAX}, got`,
    ]),
    ...[-1, 0.5, Number.NaN].map((waitTimeout): [string, unknown, string, string] => [
      `waitTimeout ${String(waitTimeout)}`,
      { waitTimeout },
      'waitTimeout',
      `expected an integer number of milliseconds from 0 to ${MAX}, or Infinity, got`,
    ]),
    ['watchdog "no"', { watchdog: 'no' }, 'watchdog', 'expected a boolean, got "no"'],
    [
      'holdFor below the shortest ttl',
      { holdFor: 5 },
      'holdFor',
      `expected an integer number of milliseconds from 10 to ${MAX}, got 5`,
    ],
    [
      'a signal that is not an AbortSignal',
      { signal: new AbortController() },
      'signal',
      'expected an AbortSignal, got an object (AbortController)',
    ],
    ...[0, -1, 1.5, '2', Number.NaN, Infinity, 1_000_001, null].map(
      (limit): [string, unknown, string, string] => [
        `limit ${String(limit)}`,
        { limit },
        'limit',
        'expected an integer from 1 to 1000000, got',
      ],
    ),
    ...['READ', 'shared', 1, null].map((mode): [string, unknown, string, string] => [
      `mode ${String(mode)}`,
      { mode },
      'mode',
      `expected 'read' or 'write', got`,
    ]),
    [
      'limit together with mode',
      { limit: 2, mode: 'read' },
      'limit',
      `expected no limit together with mode 'read' (a read-write lock has no limit), got 2`,
    ],
    ...['', 42, 'x'.repeat(257)].map((label): [string, unknown, string, string] => [
      `label ${JSON.stringify(label).slice(0, 12)}`,
      { label },
      'label',
      'expected a string of 1 to 256 characters, got',
    ]),
  ];

  it('take permits of a semaphore: 1 to its limit, none beyond', () => {
    expect(resolve({ limit: 5, permits: 5 })).toMatchObject({ limit: 5, permits: 5 });
    expect(resolve({ permits: 1 })).toMatchObject({ permits: 1 });
    for (const permits of [0, 6, 1.5, '2']) {
      expectOptionError(
        () => resolve({ limit: 5, permits }),
        'permits',
        'expected an integer from 1 to 5',
      );
    }
    expectOptionError(() => resolve({ permits: 2 }), 'permits', 'expected an integer from 1 to 1');
  });

  it('take a limit or a mode', () => {
    expect(resolve({ limit: 5 })).toMatchObject({ limit: 5, mode: undefined });
    expect(resolve({ mode: 'read' })).toMatchObject({ mode: 'read', limit: undefined });
    expect(resolve({ mode: 'write' })).toMatchObject({ mode: 'write' });
  });

  it.each(rules)('refuse %s, naming the option', (_, options, option, expected) => {
    expectOptionError(() => resolve(options), option, expected);
  });

  it.each([
    ['tll', { ttl: -1, tll: 1 }],
    ['ttl', { waitTimeout: -1, ttl: -1 }],
    ['waitTimeout', { watchdog: 1, waitTimeout: -1 }],
    ['watchdog', { holdFor: 1, watchdog: 1 }],
    ['holdFor', { signal: 1, holdFor: 1 }],
  ])('refuse %s first of two invalid options', (option, options) => {
    expectOptionError(() => resolve(options), option, `"${option}"`);
  });

  it('name who was given them in every message', () => {
    const where = '@WithLock on Orders.pay';
    for (const options of ['fast', { tll: 1 }, { ttl: -1 }, { signal: 1 }]) {
      expectOptionError(() => resolve(options, where), expect.any(String), `${where}: Invalid`);
    }
  });

  it('check the ttl of an extension as they check a ttl', () => {
    expect(checkTtl('ttl', 10)).toBe(10);
    expectOptionError(() => checkTtl('ttl', 9, 'extend'), 'ttl', 'extend: Invalid lock option');
  });
});
