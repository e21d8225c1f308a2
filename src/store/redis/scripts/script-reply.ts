import { inspect } from 'node:util';

/*
 * Reading the scripts' replies. Redis turns a Lua number into an integer reply and a Lua table
 * into an array; ioredis hands integers over as numbers, or as strings when the client is
 * configured with `stringNumbers`. Anything else means the script is not the one we sent.
 */

/** An integer of a reply, given as a number or as a string of digits. */
export function integerOf(reply: unknown): number {
  const value = typeof reply === 'string' && reply.trim() !== '' ? Number(reply) : reply;
  if (typeof value !== 'number' || !Number.isInteger(value)) throw unexpected(reply, 'an integer');
  return value;
}

/** A 0/1 flag of a reply: true for 1. */
export function flagOf(reply: unknown): boolean {
  return integerOf(reply) === 1;
}

/** The two entries of a reply that is a pair. */
export function pairOf(reply: unknown): [unknown, unknown] {
  if (!Array.isArray(reply) || reply.length !== 2) throw unexpected(reply, 'a pair');
  return [reply[0], reply[1]];
}

/** The entries of a reply that is a list of `min` to `max` entries. */
export function entriesOf(reply: unknown, min: number, max: number): unknown[] {
  if (!Array.isArray(reply) || reply.length < min || reply.length > max) {
    throw unexpected(reply, `a list of ${min} to ${max} entries`);
  }
  return reply;
}

/** The entries of a reply that is a list. */
export function listOf(reply: unknown): unknown[] {
  if (!Array.isArray(reply)) throw unexpected(reply, 'a list');
  return reply;
}

function unexpected(reply: unknown, expected: string): TypeError {
  const shown = inspect(reply, { depth: 1, maxArrayLength: 4, breakLength: Infinity });
  return new TypeError(`Redis answered ${shown} where the script returns ${expected}`);
}
