/*
 * Where a lock lives in ZooKeeper's tree:
 *
 *   <root>/<escaped key>                      the lock's node: a persistent parent, deleted by
 *                                             the release that leaves it empty
 *   <root>/<escaped key>/<token>-<sequence>   a contender: an ephemeral sequential node; the
 *                                             smallest sequence holds the lock
 *   <root>/<escaped key>.window               a throttle's window (`holdFor`): a persistent
 *                                             node whose data is how long it closes the key
 *                                             after it was written (`{"keepFor":ms}`)
 *
 * A key is escaped one-to-one into a single node name: every character but ASCII letters,
 * digits, "_", "-" and ":" becomes "%" and two hex digits per UTF-8 byte ("%" itself too). So a
 * key can neither climb the tree ("/", "." and ".." cannot appear), nor use a character that
 * ZooKeeper refuses in paths, and two keys never share a node. Nor can an escaped key end in
 * `.window`, since "." is always escaped.
 */

const PLAIN = /^[A-Za-z0-9_:-]$/;

/** The node name of a full lock key (or fenced resource key). */
export function escapeKey(key: string): string {
  let escaped = '';
  for (const char of key) {
    if (PLAIN.test(char)) {
      escaped += char;
      continue;
    }
    for (const byte of Buffer.from(char, 'utf8')) {
      escaped += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
    }
  }
  return escaped;
}

/** The parent node of a lock key's contenders. */
export function lockPath(root: string, key: string): string {
  return `${root}/${escapeKey(key)}`;
}

/** The node of a lock key's throttle window, beside its lock node. */
export function windowPath(root: string, key: string): string {
  return `${lockPath(root, key)}.window`;
}

/** How a contender's node name begins: its token, then ZooKeeper appends the sequence. */
export function contenderPrefix(token: string): string {
  return `${token}-`;
}

/** The sequence number ZooKeeper gave a contender's node (10 digits, sorts as text). */
export function sequenceOf(name: string): string {
  return name.slice(name.lastIndexOf('-') + 1);
}

/** The token a contender's node was created for (see {@link contenderPrefix}). */
export function tokenOfNode(name: string): string {
  return name.slice(0, name.lastIndexOf('-'));
}

/** Contender node names, first come first. */
export function inLine(children: readonly string[]): string[] {
  return [...children].sort((a, b) => {
    const [x, y] = [sequenceOf(a), sequenceOf(b)];
    return x < y ? -1 : x > y ? 1 : 0;
  });
}
