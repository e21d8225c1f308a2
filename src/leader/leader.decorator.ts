import 'reflect-metadata';
import { LEADER_METADATA } from '../lock.constants.js';
import { LockError } from '../lock.errors.js';
import type { LeaderOptions } from './leadership.js';

/** What `@Leader` records on a method. */
export interface LeaderMetadata {
  name: unknown;
  options: LeaderOptions;
}

/**
 * Makes a provider method the work of the leader of election `name`: of all the instances of
 * the app that have this method, one at a time leads, and the method is called on it with a
 * {@link Leadership} when its term begins. The others stand by, in the store's line, and the
 * first of them takes over when the leader resigns, shuts down, dies or is cut off.
 *
 * The term lasts until then, not until the method returns: a method may start a consumer and
 * return, and stop the consumer when `leadership.signal` aborts. A method that throws (or whose
 * promise rejects) gives the leadership up, and its instance stands again a second later.
 * Checked when the app boots; works on every backend but RedLock.
 *
 * @example
 * ```ts
 * @Injectable()
 * export class OutboxRelay {
 *   @Leader('outbox-relay', { ttl: 10_000 })
 *   relay({ epoch, signal }: Leadership) {
 *     void this.run(epoch, signal); // until signal aborts
 *   }
 * }
 * ```
 */
export function Leader(name: string, options: LeaderOptions = {}): MethodDecorator {
  return (target, propertyKey, descriptor: PropertyDescriptor) => {
    if (typeof descriptor.value !== 'function') {
      const where = `${(target as object).constructor.name}.${String(propertyKey)}`;
      throw new LockError(`@Leader on ${where}: can only decorate a method`);
    }
    const metadata: LeaderMetadata = { name, options };
    Reflect.defineMetadata(LEADER_METADATA, metadata, descriptor.value as object);
  };
}
