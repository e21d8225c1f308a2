/**
 * The hash tag Redis Cluster would hash for this key, if it has one. Lock names are checked
 * against it whatever the store (a name with a "}" that closes no tag is refused, see
 * lock-keys.ts), so that a name valid on one store is valid on all.
 */
export function hashTag(key: string): string | undefined {
  const open = key.indexOf('{');
  if (open < 0) return undefined;
  const close = key.indexOf('}', open + 1);
  if (close <= open + 1) return undefined;
  return key.slice(open + 1, close);
}
