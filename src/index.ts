export { LockModule } from './lock.module.js';
export { LockService } from './lock.service.js';
export { WithLock, type WithLockOptions } from './decorators/with-lock.decorator.js';
export type { LockKeySource } from './decorators/key-template.js';
export {
  LockExceptionFilter,
  type LockErrorBody,
  type LockGraphQLErrorExtensions,
} from './lock-exception.filter.js';
export type { Lock } from './lock.js';
export { MemoryLockSpace } from './store/memory/memory-space.js';
export type {
  AcquireOptions,
  LockModuleOptions,
  RedisClusterConfig,
  RedisServerConfig,
  ZooKeeperOptions,
} from './options/lock-options.interface.js';
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
