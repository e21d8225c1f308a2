import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnModuleInit,
} from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper.js';
import { LEADER_METADATA } from '../lock.constants.js';
import type { LeaderMetadata } from './leader.decorator.js';
import { LeaderElections } from './leader-elections.js';
import type { Leadership } from './leadership.js';

/**
 * Finds the `@Leader` methods of every provider when the app boots, checks their names and
 * options (a bad one fails the boot), and stands in their elections once the app has booted.
 */
@Injectable()
export class LeaderExplorer implements OnModuleInit, OnApplicationBootstrap {
  private readonly logger = new Logger('LockModule');

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    @Inject(LeaderElections) private readonly elections: LeaderElections,
  ) {}

  onModuleInit(): void {
    for (const wrapper of this.discovery.getProviders()) this.explore(wrapper);
  }

  /** Every module is initialised: the leader's work can find what it needs. */
  onApplicationBootstrap(): void {
    this.elections.start();
  }

  private explore(wrapper: InstanceWrapper<unknown>): void {
    const instance: unknown = wrapper.instance;
    if (typeof instance !== 'object' || instance === null) return;
    const prototype = Object.getPrototypeOf(instance) as object | null;
    if (!prototype) return;
    for (const name of this.scanner.getAllMethodNames(prototype)) {
      const method = (prototype as Record<string, unknown>)[name];
      if (typeof method !== 'function') continue;
      const metadata = Reflect.getMetadata(LEADER_METADATA, method) as LeaderMetadata | undefined;
      if (!metadata) continue;
      const where = `@Leader on ${prototype.constructor.name}.${name}`;
      if (!wrapper.isDependencyTreeStatic() || wrapper.isTransient) {
        // One election per app: a method of instances made per request has no instance to run on.
        this.logger.warn(`${where} is on a request-scoped or transient provider: skipped`);
        continue;
      }
      const lead = (leadership: Leadership): unknown =>
        (method as (leadership: Leadership) => unknown).call(instance, leadership);
      this.elections.register(metadata.name, metadata.options, lead, where);
    }
  }
}
