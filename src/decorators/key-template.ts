import { LONE_SURROGATE } from '../keys/lock-keys.js';
import { LockKeyResolutionError } from '../lock.errors.js';

/**
 * A key given to `@WithLock`: a template, a function of the arguments, or a list of them. A key
 * function receives the decorated method's arguments; annotate its parameters with their types
 * (`(order: Order) => \`order:${order.id}\``), since the decorator cannot see the method's.
 */
export type LockKeySource =
  | string
  | ((...args: never[]) => string | readonly string[])
  | readonly (string | ((...args: never[]) => string))[];

/** Turns the arguments of one call into the lock keys (without the module's prefix). */
export type KeyResolver = (args: readonly unknown[]) => string[];

/** Where a template is used, for error messages. */
export interface TemplateSite {
  className: string;
  methodName: string;
  /** The method's parameter names in order; `undefined` for destructured parameters. */
  parameters: readonly (string | undefined)[];
  /** The method has a `...rest` parameter, so positions past the named ones may exist. */
  hasRest: boolean;
}

interface Placeholder {
  path: readonly string[];
  placeholder: string;
  index: number;
  /** Encodes the value so that it cannot run into what follows it in the template. */
  encode: (value: string) => string;
}

/** A placeholder as parsed, before what follows it is known. */
type ParsedPlaceholder = Omit<Placeholder, 'encode'>;

type Segment = string | Placeholder;

/**
 * Compiles `@WithLock` keys once, at boot, checking every placeholder against the method's
 * parameters. `<name>` is the parameter called `name`, `<0>` the first parameter, and
 * `<dto.user.id>` / `<1.id>` walk properties from there.
 * @throws LockKeyResolutionError naming the class, method, placeholder and parameters
 */
export function compileKeys(source: LockKeySource, site: TemplateSite): KeyResolver {
  const parts = isKeyList(source) ? source : [source];
  if (parts.length === 0) fail(site, 'the list of keys is empty');
  const resolvers = parts.map((part): ((args: readonly unknown[]) => string[]) => {
    if (typeof part === 'function') return (args) => keysFromFunction(part, args, site);
    if (typeof part === 'string') {
      const segments = parseTemplate(part, site);
      return (args) => [render(part, segments, args, site)];
    }
    return fail(site, `a key must be a template string or a function, got ${typeof part}`);
  });
  return (args) => resolvers.flatMap((resolve) => resolve(args));
}

function isKeyList(source: LockKeySource): source is Extract<LockKeySource, readonly unknown[]> {
  return Array.isArray(source);
}

function parseTemplate(template: string, site: TemplateSite): Segment[] {
  if (template.length === 0) fail(site, 'the key template is empty');
  const segments: (string | ParsedPlaceholder)[] = [];
  const pattern = /<([^<>]*)>|([^<>]+)|([<>])/g;
  for (const match of template.matchAll(pattern)) {
    const [, placeholder, literal, stray] = match;
    if (literal !== undefined) {
      if (LONE_SURROGATE.test(literal)) {
        fail(
          site,
          `template ${JSON.stringify(template)} has a lone surrogate, which Redis and ZooKeeper would store as U+FFFD`,
        );
      }
      segments.push(literal);
    } else if (stray !== undefined) {
      fail(site, `template "${template}" has an unbalanced "${stray}" at position ${match.index}`);
    } else segments.push(compilePlaceholder(placeholder, template, site));
  }
  return segments.map((segment, i) =>
    typeof segment === 'string' ? segment : { ...segment, encode: encoderBefore(segments[i + 1]) },
  );
}

function compilePlaceholder(
  placeholder: string,
  template: string,
  site: TemplateSite,
): ParsedPlaceholder {
  const path = placeholder.split('.');
  if (path.some((part) => part.trim().length === 0 || part !== part.trim())) {
    fail(site, `template "${template}" has a malformed placeholder <${placeholder}>`);
  }
  const [head] = path;
  let index: number;
  if (/^\d+$/.test(head)) {
    index = Number(head);
    if (index >= site.parameters.length && !site.hasRest) {
      fail(site, unknownPlaceholder(placeholder, site));
    }
  } else {
    index = site.parameters.indexOf(head);
    if (index < 0) fail(site, unknownPlaceholder(placeholder, site));
  }
  return { path: path.slice(1), placeholder, index };
}

function unknownPlaceholder(placeholder: string, site: TemplateSite): string {
  const names = site.parameters.map((name, i) => name ?? `<${i}> (destructured)`);
  return (
    `placeholder <${placeholder}> matches no parameter; the method's parameters are ` +
    `(${names.join(', ')}). Name one, or address it by position as <0>, <1.id>, …`
  );
}

function render(
  template: string,
  segments: Segment[],
  args: readonly unknown[],
  site: TemplateSite,
): string {
  let key = '';
  for (const segment of segments) {
    if (typeof segment === 'string') {
      key += segment;
      continue;
    }
    let value: unknown = args[segment.index];
    let walked = site.parameters[segment.index] ?? String(segment.index);
    for (const property of segment.path) {
      if (value === undefined || value === null) break;
      value = (value as Record<string, unknown>)[property];
      walked += `.${property}`;
    }
    key += segment.encode(toKeyPart(value, segment.placeholder, walked, template, site));
  }
  return key;
}

/**
 * The string form of a placeholder's value. Refuses values that would make every caller share
 * one key (`undefined`, `null`, `''`, `[object Object]`), so that a missing argument fails loudly
 * instead of serialising all users behind `key:undefined`.
 */
function toKeyPart(
  value: unknown,
  placeholder: string,
  walked: string,
  template: string,
  site: TemplateSite,
): string {
  const refuse = (what: string): never =>
    fail(
      site,
      `placeholder <${placeholder}> of "${template}" is ${what} (at ${walked}) in this call`,
    );
  switch (typeof value) {
    case 'string':
      return value.length > 0 ? value : refuse('an empty string');
    case 'number':
      return Number.isFinite(value) ? String(value) : refuse(String(value));
    case 'bigint':
    case 'boolean':
      return String(value);
    case 'undefined':
      return refuse('undefined');
    case 'object': {
      if (value === null) return refuse('null');
      if (value instanceof Date) {
        return Number.isNaN(value.getTime()) ? refuse('an invalid Date') : value.toISOString();
      }
      // An object's own toString() is its key; the default '[object …]' form is refused below.
      // eslint-disable-next-line @typescript-eslint/no-base-to-string
      const text = Array.isArray(value) ? '' : String(value);
      return text && !text.startsWith('[object ')
        ? text
        : refuse('an object without a string form');
    }
    default:
      return refuse(`a ${typeof value}`);
  }
}

/**
 * Percent-encoded in every value: the escape character itself, what gives a key its structure
 * (`:`, the hash tag's braces, glob characters, `<`, `>`), whitespace, control characters, and
 * lone surrogates (which Redis and ZooKeeper would store alike, as U+FFFD).
 */
const ALWAYS_ESCAPED = /[%:{}*?[\]\\<>\s\p{Cc}\p{Cs}]/u;

/**
 * Ends a value that no literal character can end: `%` followed by a character that is not an
 * (upper-case) hex digit, which no encoded value contains.
 */
const VALUE_END = '%_';

/**
 * How a placeholder's value is written so that the key can be read back, left to right, into
 * the tuple of values: no two tuples give one key. A value cannot contain (unescaped) the
 * character that follows its placeholder, so that character marks where the value ends. Where
 * no such character exists (another placeholder follows, or literal text that starts with `%`,
 * which every escape code starts with), the value is closed with {@link VALUE_END}. At the end
 * of the template the key's end ends the value.
 */
function encoderBefore(next: string | ParsedPlaceholder | undefined): (value: string) => string {
  if (next === undefined) return (value) => escapeValue(value);
  if (typeof next !== 'string' || next.startsWith('%')) {
    return (value) => escapeValue(value) + VALUE_END;
  }
  const boundary = String.fromCodePoint(next.codePointAt(0) ?? 0);
  return (value) => escapeValue(value, boundary);
}

/**
 * Writes each character of {@link ALWAYS_ESCAPED}, and `boundary`, as `%XX` per byte of its
 * UTF-8 form; every other character stays as it is, so that ordinary ids stay readable.
 */
function escapeValue(value: string, boundary?: string): string {
  let encoded = '';
  for (const char of value) {
    encoded += char === boundary || ALWAYS_ESCAPED.test(char) ? percentEncoded(char) : char;
  }
  return encoded;
}

/**
 * Every code is three characters long, so no code can be read as a shorter one followed by
 * literal characters. A lone surrogate gets the generalised UTF-8 form that no valid UTF-8
 * text contains, so that it differs from every character, U+FFFD included.
 */
function percentEncoded(char: string): string {
  const point = char.codePointAt(0) ?? 0;
  const tail = (shift: number) => 0x80 | ((point >> shift) & 0x3f);
  const bytes =
    point < 0x80
      ? [point]
      : point < 0x800
        ? [0xc0 | (point >> 6), tail(0)]
        : point < 0x10000
          ? [0xe0 | (point >> 12), tail(6), tail(0)]
          : [0xf0 | (point >> 18), tail(12), tail(6), tail(0)];
  return bytes.map((byte) => `%${byte.toString(16).toUpperCase().padStart(2, '0')}`).join('');
}

function keysFromFunction(
  fn: (...args: never[]) => unknown,
  args: readonly unknown[],
  site: TemplateSite,
): string[] {
  // The arguments are those of the decorated method, which the key function was written for.
  const result = fn(...(args as never[]));
  const keys = Array.isArray(result) ? result : [result];
  for (const key of keys) {
    if (typeof key !== 'string' || key.length === 0) {
      fail(
        site,
        `the key function returned ${key === '' ? 'an empty string' : String(key)}, not a key`,
      );
    }
  }
  if (keys.length === 0) fail(site, 'the key function returned no keys');
  return keys as string[];
}

function fail(site: TemplateSite, problem: string): never {
  throw new LockKeyResolutionError(`@WithLock on ${site.className}.${site.methodName}: ${problem}`);
}
