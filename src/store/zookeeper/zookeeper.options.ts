import { DEFAULT_ZOOKEEPER_ROOT, DEFAULT_ZOOKEEPER_SESSION_TIMEOUT } from '../../lock.constants.js';
import { LockOptionsError } from '../../lock.errors.js';
import type { ResolvedZooKeeper } from '../../options/lock-options.interface.js';
import { checkTtl, rejectUnknown, requireObject } from '../../options/option-checks.js';

/** How the module sets up a `ZooKeeperLockStore`. */
export interface ZooKeeperLockStoreOptions {
  connectionString: string;
  /** The session timeout asked for, in ms. */
  sessionTimeout: number;
  /** The node under which every lock lives, e.g. `/locks`. */
  root: string;
  commandTimeout: number;
  /** The module's `keyPrefix`: errors name a key without it, as the caller did. */
  keyPrefix: string;
  /** Receives connection problems that no caller is waiting for. */
  onError?: (message: string) => void;
}

/**
 * The share of the session timeout that a lock's validity may span between two answers of the
 * server: a follower passes a session's activity on to the leader, which expires sessions, only
 * on its next tick (at most half the session timeout), so the rest is kept as a margin.
 */
const VALIDITY_SHARE = 2 / 3;

/** Module options that ZooKeeper has no use for, and why. */
const REFUSED_WITH_ZOOKEEPER: Record<string, string> = {
  redis: 'nothing with zookeeper: the locks live in ZooKeeper',
  redisClient: 'nothing with zookeeper: the locks live in ZooKeeper',
  store: 'nothing with zookeeper',
  memorySpace: 'nothing with zookeeper',
  nodeTimeout: 'nothing with zookeeper: it applies to RedLock only',
  waitForReplicas: 'nothing with zookeeper: ZooKeeper commits every write to a quorum',
};

const HOST_LIST = /^[^\s,/]+(,[^\s,/]+)*(\/\S*)?$/;
const ROOT = /^(\/[A-Za-z0-9_:-][A-Za-z0-9_:.-]*)+$/;

/**
 * Validates the `zookeeper` module option and what the other options must be beside it; returns
 * the backend's options and the module's ttl (by default two thirds of the session timeout).
 * @throws LockOptionsError naming the first option ZooKeeper cannot honour
 */
export function resolveZooKeeper(given: Record<string, unknown>): {
  zookeeper: ResolvedZooKeeper;
  ttl: number;
} {
  for (const [name, expected] of Object.entries(REFUSED_WITH_ZOOKEEPER)) {
    if (given[name] !== undefined) throw new LockOptionsError(name, given[name], expected);
  }
  if (given.fair === false) {
    throw new LockOptionsError(
      'fair',
      false,
      'true or nothing with zookeeper: its sequential nodes always serve waiters in order',
    );
  }
  if (given.watchdog === false) {
    throw new LockOptionsError('watchdog', false, WATCHDOG_ON_ZOOKEEPER);
  }
  const value = given.zookeeper;
  const options =
    typeof value === 'string' ? { connectionString: value } : requireObject('zookeeper', value);
  rejectUnknown(options, new Set(['connectionString', 'sessionTimeout', 'root']), 'zookeeper');
  const { connectionString } = options;
  if (typeof connectionString !== 'string' || !HOST_LIST.test(connectionString)) {
    throw new LockOptionsError(
      typeof value === 'string' ? 'zookeeper' : 'zookeeper.connectionString',
      connectionString,
      `'host:port[,host:port…]' (optionally followed by a chroot path)`,
    );
  }
  const root = options.root ?? DEFAULT_ZOOKEEPER_ROOT;
  if (typeof root !== 'string' || !ROOT.test(root)) {
    throw new LockOptionsError(
      'zookeeper.root',
      root,
      `an absolute path like '/locks' (segments of letters, digits, "_", ":", "-" and ".", ` +
        'none beginning with ".")',
    );
  }
  const givenTtl = given.ttl === undefined ? undefined : checkTtl('ttl', given.ttl);
  const sessionTimeout =
    options.sessionTimeout === undefined
      ? givenTtl === undefined
        ? DEFAULT_ZOOKEEPER_SESSION_TIMEOUT
        : Math.ceil(givenTtl / VALIDITY_SHARE)
      : checkTtl('zookeeper.sessionTimeout', options.sessionTimeout);
  const maxTtl = Math.floor(sessionTimeout * VALIDITY_SHARE);
  const ttl = givenTtl ?? maxTtl;
  if (ttl > maxTtl) {
    throw new LockOptionsError(
      'ttl',
      ttl,
      `at most ${maxTtl} ms with zookeeper.sessionTimeout ${sessionTimeout} ms: the session ` +
        'is the lease, and a lock may count on two thirds of it',
    );
  }
  return { zookeeper: { connectionString, sessionTimeout, root }, ttl };
}

/**
 * On ZooKeeper a lock's validity is bounded by the session: refuses, at the call, a ttl that
 * the session granted by the server (`grantedTimeout` ms) cannot vouch for.
 * @throws LockOptionsError naming the `ttl`
 */
export function checkTtlInSession(ttl: number, grantedTimeout: number): void {
  const limit = Math.floor(grantedTimeout * VALIDITY_SHARE);
  if (ttl > limit) {
    throw new LockOptionsError(
      'ttl',
      ttl,
      `at most ${limit} ms on ZooKeeper: two thirds of the session timeout ` +
        `(${grantedTimeout} ms) that the server granted`,
    );
  }
}

const WATCHDOG_ON_ZOOKEEPER =
  'true or nothing with zookeeper: a lock lives as long as the session, which the client keeps ' +
  'alive, so it cannot end by itself after its ttl';
