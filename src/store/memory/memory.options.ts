import { LockOptionsError } from '../../lock.errors.js';
import { MemoryLockSpace } from './memory-space.js';

/**
 * The `memorySpace` option: a {@link MemoryLockSpace}, with the memory store only.
 * @throws LockOptionsError
 */
export function resolveMemorySpace(
  space: unknown,
  store: 'redis' | 'memory',
): MemoryLockSpace | undefined {
  if (space === undefined) return undefined;
  if (store !== 'memory') {
    throw new LockOptionsError('memorySpace', space, `nothing unless store is 'memory'`);
  }
  if (!(space instanceof MemoryLockSpace)) {
    throw new LockOptionsError('memorySpace', space, 'a MemoryLockSpace');
  }
  return space;
}
