import { compileKeys } from '../../src/decorators/key-template.js';

/**
 * The rendering of `@WithLock` key templates, as pure functions (no server): two different
 * argument tuples must never give one key, whatever literal text the template puts between its
 * placeholders, while ordinary ids stay readable and values cannot touch the hash tag.
 */
const site = { className: 'T', methodName: 'm', parameters: ['a', 'b', 'c'], hasRest: false };

function render(template: string, ...args: unknown[]): string {
  const [key] = compileKeys(template, site)(args);
  return key;
}

/** What Redis stores: the key's UTF-8 bytes, where every lone surrogate is the same U+FFFD. */
const onTheWire = (key: string) => Buffer.from(key, 'utf8').toString('hex');

describe('key templates', () => {
  it('keep ordinary ids readable', () => {
    expect(render('order:<a>', 123)).toBe('order:123');
    expect(render('order:<a>', 'o-9_x.y')).toBe('order:o-9_x.y');
    expect(render('transfer:<a>:<b>', 1, 2)).toBe('transfer:1:2');
    expect(render('{user:<a>}:cart', 'u7')).toBe('{user:u7}:cart');
    expect(render('t:<a>-<b>', 'ab', 'cd')).toBe('t:ab-cd');
  });

  it('give different keys to values whose escape codes used to run into the next characters', () => {
    const pairs = [
      [' 28', '\u2028'],
      [' 0A', '\u200A'],
      ['\u001680', '\u1680'],
      [' 5F', '\u205F'],
    ];
    for (const [left, right] of pairs) {
      expect(onTheWire(render('by:<a>', left))).not.toBe(onTheWire(render('by:<a>', right)));
    }
  });

  it('give different keys when a value contains the literal text that follows its placeholder', () => {
    expect(render('t:<a>-<b>', 'a-b', 'c')).not.toBe(render('t:<a>-<b>', 'a', 'b-c'));
    expect(render('<a><b>', 'ab', 'c')).not.toBe(render('<a><b>', 'a', 'bc'));
    // Text that starts with `%`, as every escape code does: `z` + `%` + `25%25` against
    // `z%25` + `%` + `25`.
    expect(render('<a>%<b>', 'z', '25%')).not.toBe(render('<a>%<b>', 'z%', '25'));
  });

  it('give different keys to different lone surrogates, which Redis would store alike', () => {
    expect(onTheWire(render('by:<a>', '\uD800'))).not.toBe(onTheWire(render('by:<a>', '\uDC00')));
    expect(onTheWire(render('by:<a>', '\uD800'))).not.toBe(onTheWire(render('by:<a>', '\uFFFD')));
  });

  it('refuse, at boot, literal text with a lone surrogate, which Redis would store as U+FFFD', () => {
    expect(() => compileKeys('by:\uD83D<a>', site)).toThrow(
      '@WithLock on T.m: template "by:\\ud83d<a>" has a lone surrogate',
    );
  });

  it('keep the hash tag of the template whatever the values hold', () => {
    for (const value of ['}', '{', '{x}', 'a}b{c', '%7D']) {
      const key = render('{user:<a>}:cart:<b>', value, value);
      expect(key.match(/[{}]/g)).toEqual(['{', '}']);
      expect(key.startsWith('{user:')).toBe(true);
    }
  });

  describe.each([
    't:<a>-<b>',
    '<a>:<b>:<c>',
    'x<a>y<b>z',
    '<a><b>',
    '<a><b><c>',
    '<a>%<b>',
    '<a>%41<b>',
    '<a>%_<b>',
    '<a>_<b>',
    '<a>A<b>',
    '<a>2<b>',
    '<a>20<b>%20',
    '{<a>}<b>',
    '<a>😀<b>',
    '<a>\uFFFD<b>',
    '<a> <b>',
  ])('over many adversarial tuples, template %j', (template) => {
    it('never gives two different tuples one key', () => {
      const count = (template.match(/</g) ?? []).length;
      const literal = [...template.replace(/<[^>]*>/g, '')];
      const alphabet = [
        ...new Set([
          ...literal,
          ...['%', '_', 'A', '2', '0', ' ', '\u2028', '😀', '\uD83D', '\uDE00', '\uFFFD'],
        ]),
      ];
      const random = seeded(template.length * 7919 + count);
      const pick = () => {
        let value = '';
        const length = 1 + Math.floor(random() * 3);
        for (let i = 0; i < length; i++) value += alphabet[Math.floor(random() * alphabet.length)];
        return value;
      };
      const seen = new Map<string, string>();
      const collisions: string[] = [];
      for (let i = 0; i < 5_000; i++) {
        const tuple = Array.from({ length: count }, pick);
        const key = onTheWire(render(template, ...tuple));
        const id = JSON.stringify(tuple);
        const before = seen.get(key);
        if (before !== undefined && before !== id) collisions.push(`${before} and ${id}`);
        seen.set(key, id);
      }
      expect(collisions.slice(0, 3)).toEqual([]);
    });
  });
});

/** A small deterministic generator (mulberry32), so that a failure can be replayed. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}
