var __decorate = (this && this.__decorate) || function (decorators, target, key, desc) {
    var c = arguments.length, r = c < 3 ? target : desc === null ? desc = Object.getOwnPropertyDescriptor(target, key) : desc, d;
    if (typeof Reflect === "object" && typeof Reflect.decorate === "function") r = Reflect.decorate(decorators, target, key, desc);
    else for (var i = decorators.length - 1; i >= 0; i--) if (d = decorators[i]) r = (c < 3 ? d(r) : c > 3 ? d(target, key, r) : d(target, key)) || r;
    return c > 3 && r && Object.defineProperty(target, key, r), r;
};
var __metadata = (this && this.__metadata) || function (k, v) {
    if (typeof Reflect === "object" && typeof Reflect.metadata === "function") return Reflect.metadata(k, v);
};
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
// By package name, as users import it: this resolves to the built dist/ (see tsconfig.bench.json).
import { LockModule, LockService, WithLock } from 'nestjs-redis-lock';
import { CONFIG } from '../config.js';
import { CommandCounter } from '../redis/instrument.js';
import { closeClient, countedClient } from '../redis/server.js';
import { versionOf } from './types.js';
/** Key prefix of this library's locks in the benchmark's Redis. */
export const LIBRARY_PREFIX = 'bench:nrl:';
/** The work of workload 7, identical for the decorated method and the `using` call. */
export function decoratorWork(id) {
    return id.length;
}
/** A provider with a decorated method, for workload 7 (decorator versus `using`). */
let DecoratedService = class DecoratedService {
    async run(id) {
        return decoratorWork(id);
    }
};
__decorate([
    WithLock('dec:<id>'),
    __metadata("design:type", Function),
    __metadata("design:paramtypes", [String]),
    __metadata("design:returntype", Promise)
], DecoratedService.prototype, "run", null);
DecoratedService = __decorate([
    Injectable()
], DecoratedService);
export { DecoratedService };
let BenchAppModule = class BenchAppModule {
};
BenchAppModule = __decorate([
    Module({})
], BenchAppModule);
/**
 * This library as an application uses it: a Nest application context with
 * `LockModule.forRoot`, and `LockService` taken from it. It gets ioredis clients of its own
 * (passed in, so that their commands can be counted; the module duplicates each for its pub/sub
 * subscriber). The module's defaults are kept (watchdog on; with RedLock, fair queueing off and
 * the default nodeTimeout); ttl and wait are per call.
 */
export class ThisLibraryAdapter {
    id;
    name;
    waiting;
    counter;
    app;
    clients;
    locks;
    decorated;
    constructor(id, name, waiting, counter, app, clients, locks, decorated) {
        this.id = id;
        this.name = name;
        this.waiting = waiting;
        this.counter = counter;
        this.app = app;
        this.clients = clients;
        this.locks = locks;
        this.decorated = decorated;
    }
    /**
     * On one Redis (`url` a string), or as a RedLock over the independent masters `url` lists
     * (3 or more, which is what makes the module use RedLock), then under the id `id`; with
     * `waitForReplicas` (one Redis only) as given, else without, the module's default.
     */
    static async create(url, id = 'nestjs-redis-lock', waitForReplicas) {
        const counter = new CommandCounter();
        const urls = typeof url === 'string' ? [url] : url;
        const clients = await Promise.all(urls.map((u) => countedClient(u, counter)));
        const redlock = typeof url !== 'string';
        const app = await NestFactory.createApplicationContext({
            module: BenchAppModule,
            imports: [
                LockModule.forRoot({
                    redis: redlock ? clients : clients[0],
                    keyPrefix: LIBRARY_PREFIX,
                    ttl: CONFIG.ttl,
                    waitTimeout: CONFIG.waitMs,
                    waitForReplicas,
                }),
            ],
            providers: [DecoratedService],
        }, { logger: ['error', 'warn'] });
        const version = await versionOf('nestjs-redis-lock');
        return new ThisLibraryAdapter(id, redlock
            ? `nestjs-redis-lock ${version}, RedLock on ${urls.length} masters`
            : waitForReplicas
                ? `nestjs-redis-lock ${version}, waitForReplicas ${waitForReplicas.replicas} within ${waitForReplicas.timeout} ms`
                : `nestjs-redis-lock ${version}`, redlock
            ? 'woken by the release message of any master (RedLock: not fair, the default there)'
            : 'woken by release message (library default)', counter, app, clients, app.get(LockService), app.get(DecoratedService));
    }
    acquire(key, ttl, waitMs) {
        return this.locks.acquire(key, { ttl, waitTimeout: waitMs });
    }
    async release(lock) {
        if (!(await lock.release()))
            throw new Error(`lock ${lock.key} was no longer held at release`);
    }
    async close() {
        await this.app.close();
        // Clients passed in are not closed by the module.
        await Promise.all(this.clients.map((client) => closeClient(client)));
    }
}
//# sourceMappingURL=this-library.js.map