import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper.js';
import { isObservable, Observable, type Subscription } from 'rxjs';
import { compileKeys, type KeyResolver } from './decorators/key-template.js';
import { parameterNames } from './decorators/parameter-names.js';
import {
  bindLockedCall,
  type LockedCall,
  type LockedMethodWrapper,
  type WithLockMetadata,
} from './decorators/with-lock.decorator.js';
import { LOCK_ENGINE, LOCK_OPTIONS, WITH_LOCK_METADATA } from './lock.constants.js';
import { lockIdOf } from './keys/lock-keys.js';
import { LockOptionsError } from './lock.errors.js';
import type {
  ResolvedAcquireOptions,
  ResolvedLockOptions,
} from './options/lock-options.interface.js';
import { resolveAcquireOptions } from './options/resolve-acquire-options.js';
import type { LockEngine } from './engine/lock-engine.js';

/** A decorated method, compiled at boot. */
interface LockedMethod {
  keys: KeyResolver;
  /** What metrics and spans call the lock of each key that `keys` resolves (see `labelsOf`). */
  labels: readonly string[];
  acquire: ResolvedAcquireOptions;
  onLocked: 'throw' | 'skip';
  /** `Class.method`, for the log line of a skipped call. */
  where: string;
  returnsObservable: boolean;
  method: WithLockMetadata['method'];
}

/**
 * Finds `@WithLock` methods on every provider and controller when the app boots, checks their
 * keys and options (a bad one fails the boot), and binds each to this app's lock engine.
 */
@Injectable()
export class LockExplorer implements OnModuleInit {
  private readonly logger = new Logger('LockModule');

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    @Inject(LOCK_ENGINE) private readonly engine: LockEngine,
    @Inject(LOCK_OPTIONS) private readonly options: ResolvedLockOptions,
  ) {}

  onModuleInit(): void {
    const wrappers = [...this.discovery.getProviders(), ...this.discovery.getControllers()];
    for (const wrapper of wrappers) this.explore(wrapper);
  }

  private explore(wrapper: InstanceWrapper<unknown>): void {
    const instance: unknown = wrapper.instance;
    const staticInstance = wrapper.isDependencyTreeStatic() && !wrapper.isTransient;
    const prototype: unknown = staticInstance
      ? isObject(instance) && Object.getPrototypeOf(instance)
      : (wrapper.metatype as { prototype?: unknown } | null | undefined)?.prototype;
    if (!isObject(prototype)) return;
    for (const name of this.scanner.getAllMethodNames(prototype)) {
      const wrapperFn = (prototype as Record<string, LockedMethodWrapper>)[name];
      const metadata = Reflect.getMetadata(WITH_LOCK_METADATA, wrapperFn) as
        WithLockMetadata | undefined;
      if (!metadata) continue;
      const className = prototype.constructor.name;
      const call = this.lockedCall(this.compile(metadata, className, name, prototype));
      if (staticInstance && isObject(instance)) {
        bindLockedCall(instance, wrapperFn, call);
      } else {
        this.logger.warn(
          `${className} is request-scoped or transient: its @WithLock method ${name}() is bound ` +
            'through the class, so every instance of it uses the LockService of the app that ' +
            'booted last.',
        );
        bindLockedCall(prototype.constructor, wrapperFn, call);
      }
    }
  }

  private compile(
    metadata: WithLockMetadata,
    className: string,
    methodName: string,
    prototype: object,
  ): LockedMethod {
    const where = `@WithLock on ${className}.${methodName}`;
    const { onLocked = 'throw', ...acquireOptions } = metadata.options ?? {};
    const defaults = { ttl: this.options.ttl, waitTimeout: 0, watchdog: this.options.watchdog };
    const { capabilities } = this.engine.store;
    const acquire = resolveAcquireOptions(acquireOptions, defaults, capabilities, where);
    if (acquire.signal) {
      // One signal fixed when the class is defined would abandon every call's wait at once.
      throw new LockOptionsError(
        'signal',
        acquire.signal,
        'nothing: a decorator has no per-call signal (call LockService.using with one)',
        where,
      );
    }
    if (onLocked !== 'throw' && onLocked !== 'skip') {
      throw new LockOptionsError('onLocked', onLocked, `'throw' or 'skip'`, where);
    }
    const { names, hasRest } = parameterNames(metadata.method);
    const returnType: unknown = Reflect.getMetadata('design:returntype', prototype, methodName);
    return {
      keys: compileKeys(metadata.key, { className, methodName, parameters: names, hasRest }),
      labels: labelsOf(metadata.key, `${className}.${methodName}`),
      acquire,
      onLocked,
      where: `${className}.${methodName}`,
      returnsObservable: returnType === Observable,
      method: metadata.method,
    };
  }

  private lockedCall(locked: LockedMethod): LockedCall {
    return locked.returnsObservable
      ? (self, args) => this.observe(locked, self, args)
      : (self, args) => this.invoke(locked, args, () => locked.method.apply(self, args));
  }

  /** Runs one call under its locks; what a held lock does depends on `onLocked`. */
  private async invoke(
    locked: LockedMethod,
    args: unknown[],
    work: () => unknown,
  ): Promise<unknown> {
    const { keyPrefix } = this.options;
    const { labels, where } = locked;
    const names = locked.keys(args);
    const labelled = names.length === labels.length;
    const ids = names.map((name, i) => lockIdOf(keyPrefix, name, labelled ? labels[i] : where));
    return this.engine.scopes.run(ids, locked.acquire, work, (error) => {
      if (locked.onLocked !== 'skip') throw error;
      // A skipped run is the point of 'skip' (a scheduled job that another replica runs), so
      // the quietest level Nest has; someone wondering why a job did not run here can keep it.
      this.logger.verbose(`${locked.where} skipped: ${error.message}`);
      return undefined;
    });
  }

  /**
   * A method that returns an Observable: the lock is taken on subscription and held until the
   * stream completes, errors, or the subscriber (e.g. an SSE client that went away) unsubscribes.
   */
  private observe(locked: LockedMethod, self: object, args: unknown[]): Observable<unknown> {
    return new Observable((subscriber) => {
      let inner: Subscription | undefined;
      let unsubscribed = false;
      let finish!: { resolve: () => void; reject: (error: unknown) => void };
      const ended = new Promise<void>((resolve, reject) => (finish = { resolve, reject }));
      this.invoke(locked, args, () => {
        if (unsubscribed) return undefined;
        const source = locked.method.apply(self, args);
        if (!isObservable(source)) return source;
        inner = source.subscribe({
          next: (value) => subscriber.next(value),
          error: finish.reject,
          complete: finish.resolve,
        });
        return ended;
      }).then(
        () => subscriber.complete(),
        (error: unknown) => subscriber.error(error),
      );
      return () => {
        unsubscribed = true;
        inner?.unsubscribe();
        finish.resolve();
      };
    });
  }
}

/**
 * What metrics and spans call the locks of a decorated method: each template as written
 * (`'order:<orderId>'`), and for a key function the method (`Class.method`), whose keys may
 * carry ids. One label per key the source names, in its order.
 */
function labelsOf(source: WithLockMetadata['key'], where: string): string[] {
  const parts: readonly unknown[] =
    typeof source === 'string' ? [source] : Array.isArray(source) ? source : [source];
  return parts.map((part) => (typeof part === 'string' ? part : where));
}

function isObject(value: unknown): value is object {
  return typeof value === 'object' && value !== null;
}
