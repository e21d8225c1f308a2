import { randomBytes } from 'node:crypto';

/** Bytes of one token: 128 random bits. */
const TOKEN_BYTES = 16;
/** Tokens drawn from the system's generator at once, since one call per lock costs more. */
const POOL_TOKENS = 256;

let pool = Buffer.alloc(0);
let offset = 0;

/** What separates a token's random part from the instance that holds it. */
const OWNER_MARK = '@';
/** Characters an owner keeps as they are in a token; every other one is escaped. */
const PLAIN = /^[A-Za-z0-9_.:-]$/;

/**
 * A fresh 128-bit random token from `crypto`, as 32 hex characters after `tag` (which names
 * the kind of lock it is for: see `LockKind.tag`), followed by `owner` (see {@link ownerMark})
 * when given: the store keeps the token with every hold and place in line, so the token is
 * where `inspect()` reads who holds, at no cost beyond its length.
 */
export function newToken(tag = '', owner = ''): string {
  if (offset >= pool.length) {
    pool = randomBytes(TOKEN_BYTES * POOL_TOKENS);
    offset = 0;
  }
  const token = pool.toString('hex', offset, offset + TOKEN_BYTES);
  offset += TOKEN_BYTES;
  return tag + token + owner;
}

/**
 * What a token ends with to name the instance that holds it: `@` and the instance id, with
 * every character but ASCII letters, digits, `_`, `.`, `:` and `-` escaped as `%` and two hex
 * digits per UTF-8 byte, so that a token stays a valid ZooKeeper node name and holds no space
 * (which the Redis scripts' records separate fields with).
 */
export function ownerMark(instanceId: string): string {
  let escaped = '';
  for (const char of instanceId) {
    if (PLAIN.test(char)) {
      escaped += char;
      continue;
    }
    for (const byte of Buffer.from(char, 'utf8')) {
      escaped += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
    }
  }
  return OWNER_MARK + escaped;
}

/** The instance id a token names (see {@link ownerMark}); `undefined` for a token without one. */
export function ownerOfToken(token: string): string | undefined {
  const at = token.indexOf(OWNER_MARK);
  if (at < 0) return undefined;
  try {
    return decodeURIComponent(token.slice(at + 1));
  } catch {
    return token.slice(at + 1);
  }
}

/** The owner mark a token ends with (`@` and the escaped instance id), or `undefined`. */
export function markOfToken(token: string): string | undefined {
  const at = token.indexOf(OWNER_MARK);
  return at < 0 ? undefined : token.slice(at);
}
