import {
  DEFAULT_COMMAND_TIMEOUT,
  DEFAULT_DRIFT_FACTOR,
  DEFAULT_KEY_PREFIX,
  DEFAULT_NODE_TIMEOUT,
  DEFAULT_SHUTDOWN_GRACE,
  DEFAULT_TTL,
  DEFAULT_WAIT_TIMEOUT,
} from '../lock.constants.js';
import { LONE_SURROGATE } from '../keys/lock-keys.js';
import { LockOptionsError } from '../lock.errors.js';
import { BACKEND_OPTIONS } from '../store/backends.js';
import type {
  LockModuleOptions,
  ResolvedLockOptions,
  ResolvedRedis,
  ResolvedCommonOptions,
  ResolvedRedisOptions,
} from './lock-options.interface.js';
import {
  checkBoolean,
  checkGrace,
  checkTimeout,
  checkTtl,
  checkWaitTimeout,
  rejectUnknown,
  requireObject,
} from './option-checks.js';
import { resolveInstanceId } from './instance-id.js';

const MODULE_OPTION_NAMES = new Set([
  'redis',
  'redisClient',
  'zookeeper',
  'postgres',
  'keyPrefix',
  'ttl',
  'waitTimeout',
  'watchdog',
  'shutdownGrace',
  'commandTimeout',
  'store',
  'memorySpace',
  'fair',
  'nodeTimeout',
  'driftFactor',
  'waitForReplicas',
  'isGlobal',
  'instanceId',
]);
/**
 * How late Redis may answer a WAIT whose timeout ran out, in ms: it checks blocked clients on
 * its periodic tick (10 a second by default), plus a round trip.
 */
const WAIT_SLACK = 150;

/**
 * `exceptionFilter` decides which providers the module registers, so Nest reads it where the
 * module is defined; `forRoot` takes it out of the options. Here it can only come from an
 * options factory, too late to act: refused rather than ignored.
 */
function rejectModuleShape(given: Record<string, unknown>): void {
  if (given.exceptionFilter === undefined) return;
  throw new LockOptionsError(
    'exceptionFilter',
    given.exceptionFilter,
    'it beside useFactory, useClass or useExisting in forRootAsync, not from the options factory',
  );
}

/** The module options as given, once known to be an object of known names. */
type GivenOptions = Record<string, unknown>;

/**
 * Validates module options and fills in defaults.
 * @throws LockOptionsError naming the first invalid option and its value
 */
export function resolveModuleOptions(options: LockModuleOptions | undefined): ResolvedLockOptions {
  const given = requireObject('options', options ?? {});
  rejectModuleShape(given);
  rejectUnknown(given, MODULE_OPTION_NAMES);
  if (given.postgres !== undefined) return resolvePostgresModule(given);
  if (given.zookeeper !== undefined) return resolveZooKeeperModule(given);
  if (BACKEND_OPTIONS.own.isGiven(given.store)) return resolveOwnStoreModule(given, given.store);
  const store = resolveStore(given);
  // The memory store keeps Redis's semantics, and so the checks of Redis's options.
  const redisClient = BACKEND_OPTIONS.redis.resolveClient(given.redisClient);
  const redis = BACKEND_OPTIONS.redis.resolve(given.redis, redisClient);
  rejectOptionsOfOtherTopologies(given, redis);
  const { ttl, commandTimeout, nodeTimeout } = resolveTimeouts(given, redis);
  const memorySpace = BACKEND_OPTIONS.memory.resolveSpace(given.memorySpace, store);
  const common = {
    fair: checkBoolean('fair', given.fair ?? redis.topology !== 'redlock'),
    keyPrefix: resolveKeyPrefix(given.keyPrefix),
    ttl,
    waitTimeout: checkWaitTimeout('waitTimeout', given.waitTimeout ?? DEFAULT_WAIT_TIMEOUT),
    watchdog: checkBoolean('watchdog', given.watchdog ?? true),
    shutdownGrace: resolveShutdownGrace(given.shutdownGrace),
    commandTimeout,
    driftFactor: resolveDriftFactor(given.driftFactor),
    instanceId: resolveInstanceId(given.instanceId),
  };
  if (store === 'memory') {
    if (given.waitForReplicas !== undefined) throw waitForReplicasOff(given.waitForReplicas);
    if (given.redisClient !== undefined) {
      throw new LockOptionsError('redisClient', given.redisClient, `nothing with store: 'memory'`);
    }
    return { ...common, store, memorySpace };
  }
  const resolved: ResolvedRedisOptions = { ...common, store, redis, redisClient, nodeTimeout };
  return { ...resolved, waitForReplicas: resolveWaitForReplicas(given.waitForReplicas, resolved) };
}

/** The options with `zookeeper`, which refuses the options of the Redis topologies. */
function resolveZooKeeperModule(given: GivenOptions): ResolvedLockOptions {
  const { zookeeper, ttl } = BACKEND_OPTIONS.zookeeper.resolve(given);
  return { store: 'zookeeper', zookeeper, ...resolveCommon(given, ttl, true), watchdog: true };
}

/** The options with `postgres`, which refuses the options of the other backends. */
function resolvePostgresModule(given: GivenOptions): ResolvedLockOptions {
  const postgres = BACKEND_OPTIONS.postgres.resolve(given);
  const fair = checkBoolean('fair', given.fair ?? true);
  return {
    store: 'postgres',
    postgres,
    ...resolveCommon(given, checkTtl('ttl', given.ttl ?? DEFAULT_TTL), fair),
  };
}

/** The options with a store of one's own, which refuses the options of the other backends. */
function resolveOwnStoreModule(given: GivenOptions, store: object): ResolvedLockOptions {
  const own = BACKEND_OPTIONS.own.resolve(given, store);
  // Whether waiters keep a line is the store's to declare.
  const fair = own.capabilities.queueing;
  return {
    store: 'own',
    own,
    ...resolveCommon(given, checkTtl('ttl', given.ttl ?? DEFAULT_TTL), fair),
  };
}

/** The options every backend but Redis shares, past its own. */
function resolveCommon(given: GivenOptions, ttl: number, fair: boolean): ResolvedCommonOptions {
  return {
    fair,
    keyPrefix: resolveKeyPrefix(given.keyPrefix),
    ttl,
    waitTimeout: checkWaitTimeout('waitTimeout', given.waitTimeout ?? DEFAULT_WAIT_TIMEOUT),
    watchdog: checkBoolean('watchdog', given.watchdog ?? true),
    shutdownGrace: resolveShutdownGrace(given.shutdownGrace),
    commandTimeout: checkTimeout('commandTimeout', given.commandTimeout ?? DEFAULT_COMMAND_TIMEOUT),
    driftFactor: resolveDriftFactor(given.driftFactor),
    instanceId: resolveInstanceId(given.instanceId),
  };
}

function resolveShutdownGrace(grace: unknown): number {
  return checkGrace('shutdownGrace', grace ?? DEFAULT_SHUTDOWN_GRACE);
}

function resolveStore(given: GivenOptions): 'redis' | 'memory' {
  const store = given.store ?? 'redis';
  if (store !== 'redis' && store !== 'memory') {
    throw new LockOptionsError(
      'store',
      store,
      `'redis', 'memory' or a store of your own (LockStore)`,
    );
  }
  if (store === 'memory' && given.redis !== undefined) {
    throw new LockOptionsError('redis', given.redis, `nothing with store: 'memory'`);
  }
  return store;
}

/** `nodeTimeout` is for RedLock only; `commandTimeout` and a fair queue for the others. */
function rejectOptionsOfOtherTopologies(given: GivenOptions, redis: ResolvedRedis): void {
  const redlock = redis.topology === 'redlock';
  if (given.nodeTimeout !== undefined && !redlock) {
    throw new LockOptionsError(
      'nodeTimeout',
      given.nodeTimeout,
      'nothing: it applies to RedLock only (redis: an array of masters)',
    );
  }
  if (given.commandTimeout !== undefined && redlock) {
    throw new LockOptionsError(
      'commandTimeout',
      given.commandTimeout,
      'nothing with RedLock, where nodeTimeout bounds each master instead',
    );
  }
  if (redlock && given.fair === true) {
    // Fair hand-over needs one queue that orders the waiters; N masters would order them
    // differently and split the votes.
    throw new LockOptionsError(
      'fair',
      given.fair,
      'false or nothing with RedLock (redis: an array): waiters are not queued across masters',
    );
  }
}

/** The TTL and the bounds on Redis's answers, which must leave a lock time to be granted. */
function resolveTimeouts(
  given: GivenOptions,
  redis: ResolvedRedis,
): Pick<ResolvedRedisOptions, 'ttl' | 'commandTimeout' | 'nodeTimeout'> {
  const ttl = checkTtl('ttl', given.ttl ?? DEFAULT_TTL);
  const commandTimeout = checkTimeout(
    'commandTimeout',
    given.commandTimeout ?? DEFAULT_COMMAND_TIMEOUT,
  );
  const nodeTimeout = checkTimeout('nodeTimeout', given.nodeTimeout ?? DEFAULT_NODE_TIMEOUT);
  if (redis.topology === 'redlock' && nodeTimeout * 2 > ttl) {
    // A majority's answers must come in with validity to spare.
    throw new LockOptionsError(
      'nodeTimeout',
      nodeTimeout,
      `at most half the ttl (${ttl} ms), and better far below it` +
        (given.nodeTimeout === undefined ? '; this is its default: set nodeTimeout lower' : ''),
    );
  }
  return { ttl, commandTimeout, nodeTimeout };
}

function resolveKeyPrefix(value: unknown): string {
  const prefix = value ?? DEFAULT_KEY_PREFIX;
  if (
    typeof prefix !== 'string' ||
    prefix.length === 0 ||
    prefix.length > 256 ||
    /[{}]/.test(prefix) ||
    LONE_SURROGATE.test(prefix)
  ) {
    throw new LockOptionsError(
      'keyPrefix',
      prefix,
      'a non-empty string of at most 256 characters without "{" or "}" (the library sets hash ' +
        'tags itself), in well-formed Unicode',
    );
  }
  return prefix;
}

function resolveDriftFactor(value: unknown): number {
  const factor = value ?? DEFAULT_DRIFT_FACTOR;
  if (typeof factor !== 'number' || !Number.isFinite(factor) || factor < 0 || factor >= 0.5) {
    throw new LockOptionsError('driftFactor', factor, 'a number from 0 to below 0.5');
  }
  return factor;
}

function waitForReplicasOff(value: unknown): LockOptionsError {
  return new LockOptionsError(
    'waitForReplicas',
    value,
    'nothing: it applies to one Redis or a Sentinel-managed master only',
  );
}

/** `waitForReplicas` only fits one Redis, and its WAITs must fit in the other bounds. */
function resolveWaitForReplicas(
  value: unknown,
  { redis, commandTimeout, ttl }: ResolvedRedisOptions,
): ResolvedRedisOptions['waitForReplicas'] {
  if (value === undefined) return undefined;
  if (redis.topology !== 'single') throw waitForReplicasOff(value);
  const given = requireObject('waitForReplicas', value);
  rejectUnknown(given, new Set(['replicas', 'timeout']), 'waitForReplicas');
  const replicas = given.replicas;
  if (typeof replicas !== 'number' || !Number.isInteger(replicas) || replicas < 1) {
    throw new LockOptionsError('waitForReplicas.replicas', replicas, 'an integer of at least 1');
  }
  // WAIT's timeout 0 means "forever", which would hang an acquisition with no replica.
  const timeout = checkTimeout('waitForReplicas.timeout', given.timeout);
  // A caller may wait for a WAIT on its way and then for the next one (they are shared): both
  // must fit in commandTimeout, or a WAIT that runs out looks like Redis not answering. And a
  // WAIT must not outlast the lock it waits for.
  // Redis notices a WAIT's timeout on its next tick, up to WAIT_SLACK late.
  const limit = Math.min(Math.floor(commandTimeout / 2) - WAIT_SLACK, ttl - 1);
  if (timeout > limit) {
    throw new LockOptionsError(
      'waitForReplicas.timeout',
      timeout,
      `at most ${limit} ms (two WAITs, each up to ${WAIT_SLACK} ms late, within ` +
        `commandTimeout, ${commandTimeout} ms, and below the ttl, ${ttl} ms)`,
    );
  }
  return { replicas, timeout };
}
