import { LockKeyResolutionError } from '../lock.errors.js';

/** A key given to `@WithLock`: a template, a function of the arguments, or a list of them. */
export type LockKeySource =
  | string
  | ((...args: any[]) => string | readonly string[])
  | readonly (string | ((...args: any[]) => string))[];

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

type Segment = string | { path: readonly string[]; placeholder: string; index: number };

/**
 * Compiles `@WithLock` keys once, at boot, checking every placeholder against the method's
 * parameters. `<name>` is the parameter called `name`, `<0>` the first parameter, and
 * `<dto.user.id>` / `<1.id>` walk properties from there.
 * @throws LockKeyResolutionError naming the class, method, placeholder and parameters
 */
export function compileKeys(source: LockKeySource, site: TemplateSite): KeyResolver {
  const parts = Array.isArray(source) ? source : [source];
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

function parseTemplate(template: string, site: TemplateSite): Segment[] {
  if (template.length === 0) fail(site, 'the key template is empty');
  const segments: Segment[] = [];
  const pattern = /<([^<>]*)>|([^<>]+)|([<>])/g;
  for (const match of template.matchAll(pattern)) {
    const [, placeholder, literal, stray] = match;
    if (literal !== undefined) segments.push(literal);
    else if (stray !== undefined) {
      fail(site, `template "${template}" has an unbalanced "${stray}" at position ${match.index}`);
    } else segments.push(compilePlaceholder(placeholder, template, site));
  }
  return segments;
}

function compilePlaceholder(placeholder: string, template: string, site: TemplateSite): Segment {
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
    key += escapeValue(toKeyPart(value, segment.placeholder, walked, template, site));
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
 * Percent-encodes the characters that give a key its structure (`:`, braces, glob characters,
 * `<`, `>`, whitespace and `%` itself), so that a value such as `1:admin` or `*` can neither
 * collide with another key nor change the key's hash tag. The encoding is one-to-one.
 */
export function escapeValue(value: string): string {
  return value.replace(
    /[%:{}*?[\]\\<>\s\p{Cc}]/gu,
    (char) => `%${char.codePointAt(0)!.toString(16).toUpperCase().padStart(2, '0')}`,
  );
}

function keysFromFunction(
  fn: (...args: any[]) => unknown,
  args: readonly unknown[],
  site: TemplateSite,
): string[] {
  const result = fn(...args);
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

/**
 * Reads a function's parameter names from its source text. Minifiers rename parameters, which
 * is why templates can also address parameters by position (`<0>`).
 */
export function parameterNames(fn: (...args: any[]) => unknown): {
  names: (string | undefined)[];
  hasRest: boolean;
} {
  const source = Function.prototype.toString.call(fn);
  const open = source.indexOf('(');
  if (open < 0) return { names: [], hasRest: false };
  const params: string[] = [];
  let depth = 0;
  let current = '';
  let quote: string | undefined;
  for (let i = open + 1; i < source.length; i++) {
    const char = source[i];
    if (quote) {
      current += char;
      if (char === '\\') current += source[++i];
      else if (char === quote) quote = undefined;
      continue;
    }
    if (char === '"' || char === "'" || char === '`') quote = char;
    else if ('([{'.includes(char)) depth++;
    else if (')]}'.includes(char)) {
      if (depth === 0) break;
      depth--;
    } else if (char === ',' && depth === 0) {
      params.push(current);
      current = '';
      continue;
    }
    current += char;
  }
  if (current.trim()) params.push(current);
  let hasRest = false;
  const names = params.map((param) => {
    const text = param.replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '').trim();
    if (text.startsWith('...')) {
      hasRest = true;
      return undefined;
    }
    const name = /^([\p{L}\p{Nl}$_][\p{L}\p{Nl}\p{Mn}\p{Mc}\p{Nd}\p{Pc}$]*)/u.exec(text)?.[1];
    return name;
  });
  return { names, hasRest };
}
