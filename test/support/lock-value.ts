/**
 * The holder's token in the value the Redis store keeps under a mutex's key
 * (`"<token> <fencing token>"`, and `" +"` once a waiter queued for it), or null for no value.
 */
export function holderIn(value: string | null | undefined): string | null {
  return value == null ? null : value.split(' ')[0];
}
