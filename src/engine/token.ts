import { randomBytes } from 'node:crypto';

/** Bytes of one token: 128 random bits. */
const TOKEN_BYTES = 16;
/** Tokens drawn from the system's generator at once, since one call per lock costs more. */
const POOL_TOKENS = 256;

let pool = Buffer.alloc(0);
let offset = 0;

/**
 * A fresh 128-bit random token from `crypto`, as 32 hex characters after `tag` (which names
 * the kind of lock it is for: see `tagOf`).
 */
export function newToken(tag = ''): string {
  if (offset >= pool.length) {
    pool = randomBytes(TOKEN_BYTES * POOL_TOKENS);
    offset = 0;
  }
  const token = pool.toString('hex', offset, offset + TOKEN_BYTES);
  offset += TOKEN_BYTES;
  return tag + token;
}
