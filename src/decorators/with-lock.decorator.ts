import 'reflect-metadata';
import { Observable, throwError } from 'rxjs';
import { LockError } from '../lock.errors.js';
import { WITH_LOCK_METADATA } from '../lock.constants.js';
import type { AcquireOptions } from '../options/lock-options.interface.js';
import type { LockKeySource } from './key-template.js';

/** Options of {@link WithLock}; each overrides the module's default. */
export interface WithLockOptions extends AcquireOptions {
  /**
   * What a call does when the lock is held: `'throw'` a `LockNotAcquiredError` (the default;
   * `409 Conflict` over HTTP), or `'skip'`: return `undefined` without running the method.
   */
  onLocked?: 'throw' | 'skip';
  /** Ms to wait for a held lock. Default `0` for the decorator: a concurrent call fails at once. */
  waitTimeout?: number;
}

/** What `@WithLock` records on a method. */
export interface WithLockMetadata {
  key: LockKeySource;
  options: WithLockOptions;
  /** The method as written, before the decorator wrapped it. */
  method: (...args: unknown[]) => unknown;
}

/** Runs one call of a decorated method; installed per instance by the lock explorer. */
export type LockedCall = (self: object, args: unknown[]) => unknown;

/** A decorated method as installed on the prototype. */
export type LockedMethodWrapper = (...args: unknown[]) => unknown;

const instanceCalls = new WeakMap<object, Map<LockedMethodWrapper, LockedCall>>();
const classCalls = new WeakMap<object, Map<LockedMethodWrapper, LockedCall>>();

/**
 * @internal Makes `call` run the decorated method `wrapper` for `owner`: an instance, or a class
 * whose instances are created per request.
 */
export function bindLockedCall(
  owner: object,
  wrapper: LockedMethodWrapper,
  call: LockedCall,
): void {
  const registry = typeof owner === 'function' ? classCalls : instanceCalls;
  let calls = registry.get(owner);
  if (!calls) registry.set(owner, (calls = new Map<LockedMethodWrapper, LockedCall>()));
  calls.set(wrapper, call);
}

/**
 * Runs the decorated method under a distributed lock whose key comes from the call's arguments.
 *
 * The key is a template (`'order:<orderId>'`, `'transfer:<from.id>:<to.id>'`, `'job:<0>'`), a
 * function of the arguments, or an array of them for a lock on several keys. The lock is held,
 * with the watchdog, until the method's promise settles or, for a method that returns an
 * `Observable`, until the stream completes, errors or is unsubscribed. Works on provider methods
 * and controller route handlers of apps that import `LockModule`; placeholders are checked
 * against the method's parameters when the app boots. The method becomes asynchronous.
 *
 * @example
 * ```ts
 * @WithLock('lottery:<userId>')
 * async draw(userId: string) { … }
 *
 * @WithLock('submit:<userId>:<assignmentId>', { holdFor: 5_000 })
 * async submit(userId: string, assignmentId: string) { … }
 * ```
 */
export function WithLock(key: LockKeySource, options: WithLockOptions = {}): MethodDecorator {
  return (target, propertyKey, descriptor: PropertyDescriptor) => {
    const method = descriptor.value as ((...args: unknown[]) => unknown) | undefined;
    const where = `${(target as object).constructor.name}.${String(propertyKey)}`;
    if (typeof method !== 'function') {
      throw new LockError(`@WithLock on ${where}: can only decorate a method`);
    }
    // Read as the explorer reads it: TypeScript defines it before this decorator runs.
    const returnsObservable =
      Reflect.getMetadata('design:returntype', target, propertyKey) === Observable;
    // The wrapper is installed now, not at boot, so that the router (which reads route handlers
    // before any module hook runs) and every other caller get it; it only dispatches to the call
    // that the explorer bound at boot, and refuses to run the method unlocked.
    const wrapper = function (this: unknown, ...args: unknown[]): unknown {
      const self = this as object;
      const call =
        (self && instanceCalls.get(self)?.get(wrapper)) ??
        (self && classCalls.get(self.constructor)?.get(wrapper));
      if (call) return call(self, args);
      // Refused the way a bound call fails, so that the caller's .catch() (or the stream's
      // error handler) sees it, rather than a throw from what it takes for an async method.
      const error = new LockError(
        `@WithLock on ${where}: no LockModule has bound this method. Import LockModule into ` +
          'the application and register the class as a provider or controller.',
      );
      return returnsObservable ? throwError(() => error) : Promise.reject(error);
    };
    for (const metadataKey of Reflect.getOwnMetadataKeys(method)) {
      Reflect.defineMetadata(metadataKey, Reflect.getOwnMetadata(metadataKey, method), wrapper);
    }
    Object.defineProperty(wrapper, 'name', { value: method.name });
    const metadata: WithLockMetadata = { key, options, method };
    Reflect.defineMetadata(WITH_LOCK_METADATA, metadata, wrapper);
    descriptor.value = wrapper;
  };
}
