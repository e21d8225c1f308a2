export { LockModule } from './lock.module.js';
export { LockService } from './lock.service.js';
export { LockHealthIndicator, type LockHealthResult } from './lock-health.indicator.js';
export { LeaderService, type LeaderInfo } from './leader/leader.service.js';
export { Leader } from './leader/leader.decorator.js';
export type { Leadership, LeaderOptions } from './leader/leadership.js';
export { WithLock, type WithLockOptions } from './decorators/with-lock.decorator.js';
export type { LockKeySource } from './decorators/key-template.js';
export { LockExceptionFilter } from './transports/lock-exception.filter.js';
export type { LockErrorBody, LockGraphQLErrorExtensions } from './transports/lock-error-body.js';
export type { Lock, LockHandle, MultiLock } from './lock.js';
export type { LockHolder, LockInfo } from './lock-info.js';
export { MemoryLockSpace } from './store/memory/memory-space.js';
export type {
  AcquireOptions,
  LockModuleOptions,
  RedisClusterConfig,
  RedisClusterNode,
  RedisClusterOptions,
  RedisConnectionOptions,
  RedisLikeClient,
  RedisServerConfig,
  ZooKeeperOptions,
} from './options/lock-options.interface.js';
export type { PostgresOptions, PostgresPool } from './store/postgres/postgres.options.js';
export {
  fenceTransaction,
  type FenceTransactionOptions,
} from './store/postgres/postgres-fencing.js';
export { postgresLockSchema } from './store/postgres/postgres-schema.js';
export type { LockOptionsFactory } from './options/lock-options-factory.interface.js';
export type {
  AcquireAttempt,
  FencedWriteOutcome,
  LockEvent,
  LockStore,
  ReleaseOutcome,
  RenewalEntry,
  StoredHold,
  StoredLock,
  TransferOutcome,
} from './store/lock-store.interface.js';
export type { LockStoreCapabilities } from './store/capabilities.js';
export {
  LockConnectionError,
  LockError,
  LockKeyResolutionError,
  LockKindError,
  LockLostError,
  LockNotAcquiredError,
  LockOptionsError,
  LockQuorumError,
  LockReplicationError,
  LockShuttingDownError,
  StaleFencingTokenError,
} from './lock.errors.js';
