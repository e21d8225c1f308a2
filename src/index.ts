export { LockModule } from './lock.module.js';
export { LockService } from './lock.service.js';
export type { Lock } from './lock.js';
export type { AcquireOptions, LockModuleOptions } from './lock.options.js';
export {
  LockConnectionError,
  LockError,
  LockKeyResolutionError,
  LockLostError,
  LockNotAcquiredError,
  LockOptionsError,
} from './lock.errors.js';
