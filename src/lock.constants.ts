/** Defaults of {@link LockModuleOptions}. */
export const DEFAULT_KEY_PREFIX = 'lock:';
export const DEFAULT_TTL = 30_000;
export const DEFAULT_WAIT_TIMEOUT = 10_000;
/**
 * Kubernetes kills a pod 30 s after SIGTERM unless told otherwise, and that budget also pays
 * for a preStop hook (often a few seconds) and for the HTTP server to drain and the connections
 * to close after the locked work ends: 20 s leaves them 10.
 */
export const DEFAULT_SHUTDOWN_GRACE = 20_000;
export const DEFAULT_COMMAND_TIMEOUT = 5_000;
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';
export const DEFAULT_NODE_TIMEOUT = 250;
export const DEFAULT_DRIFT_FACTOR = 0.01;
export const DEFAULT_ZOOKEEPER_ROOT = '/locks';
export const DEFAULT_ZOOKEEPER_SESSION_TIMEOUT = 30_000;
/** Added to the drift allowance of every TTL, in ms. */
export const DRIFT_MS = 2;

/** Longest key accepted, in characters, not counting the prefix. */
export const MAX_KEY_LENGTH = 1024;
/** Shortest TTL accepted: below it a watchdog would renew more often than a round trip takes. */
export const MIN_TTL = 10;
/** Longest TTL or timeout accepted: the largest delay a Node.js timer can hold. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** Injection tokens (private to the package). */
export const LOCK_OPTIONS = Symbol('lock:options');
export const LOCK_STORE = Symbol('lock:store');
export const LOCK_ENGINE = Symbol('lock:engine');

/** Metadata key under which `@WithLock` records its key and options. */
export const WITH_LOCK_METADATA = 'lock:with-lock';
/** Metadata key under which `@Leader` records its election's name and options. */
export const LEADER_METADATA = 'lock:leader';
