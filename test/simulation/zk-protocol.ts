import { ZK_CODES, ZK_EVENTS, type ZkOp, type ZNode } from './zk-server.js';

/*
 * The shapes of node-zookeeper-client's values that the store reads: its exceptions, watch
 * events, states and Stats, and how its `create` reads its arguments.
 */

export const nameOf = (table: Record<string, number>, code: number) =>
  Object.keys(table).find((name) => table[name] === code) ?? String(code);

/** A failed call, shaped as node-zookeeper-client's `Exception`. */
export class ZkException extends Error {
  constructor(
    readonly code: number,
    readonly path?: string,
  ) {
    super(`Exception: ${nameOf(ZK_CODES, code)}[${code}]${path ? `@${path}` : ''}`);
    this.name = nameOf(ZK_CODES, code);
  }
  getCode = () => this.code;
  getName = () => this.name;
  getPath = () => this.path;
}

/** A watch event, shaped as node-zookeeper-client's `Event`. */
export class ZkEvent {
  readonly name: string;
  constructor(
    readonly type: number,
    readonly path: string,
  ) {
    this.name = nameOf(ZK_EVENTS, type);
  }
  getType = () => this.type;
  getName = () => this.name;
  getPath = () => this.path;
  toString = () => `${this.name}[${this.type}]@${this.path}`;
}

const state = (name: string, code: number) => ({ name, code, getName: () => name });
export const STATES = {
  DISCONNECTED: state('DISCONNECTED', 0),
  SYNC_CONNECTED: state('SYNC_CONNECTED', 3),
  EXPIRED: state('EXPIRED', -122),
};

export type Callback = (error: ZkException | null, ...results: unknown[]) => void;
export type Watcher = (event: ZkEvent) => void;
export type WatchKind = 'data' | 'child' | 'existence';

/** A 64-bit field of a Stat, as the client library gives it: 8 bytes, big-endian. */
export function long(value: number): Buffer {
  const bytes = Buffer.alloc(8);
  bytes.writeBigInt64BE(BigInt(value));
  return bytes;
}

export function statOf(node: ZNode) {
  return {
    czxid: long(node.czxid),
    mzxid: long(node.mzxid),
    ctime: long(node.ctime),
    mtime: long(node.mtime),
    version: node.version,
    cversion: 0,
    aversion: 0,
    ephemeralOwner: long(node.owner),
    dataLength: node.data.length,
    numChildren: 0,
    pzxid: long(node.czxid),
  };
}

/** The data, ACLs, mode and callback of `create`, in any order, as the client library reads them. */
export function creation(path: string, args: unknown[]) {
  const data = args.find((arg): arg is Buffer => Buffer.isBuffer(arg));
  const mode = args.find((arg): arg is number => typeof arg === 'number');
  const callback = args.find((arg) => typeof arg === 'function') as Callback;
  const op: ZkOp = { type: 'create', path, data: data ?? Buffer.alloc(0), mode: mode ?? 0 };
  return { op, callback };
}
