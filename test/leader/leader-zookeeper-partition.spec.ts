import { randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Leader, LeaderService, LockModule, type Leadership } from '../../src/index.js';
import { until } from '../support/backends.js';
import { FencedResource, LeaderProcess } from '../support/leader-child.js';
import { violationsOf } from '../support/leader-history.js';
import { sleep } from '../support/lock-app.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { ZooKeeperServer } from '../support/zookeeper-server.js';
import { ZooKeeperTree } from '../support/zookeeper-tree.js';

const TTL = 1_000;
const SESSION = 3_000;

/**
 * A ZooKeeper leader cut off from the server (each replica reaches it through a proxy of its
 * own, which holds every byte while cut), the ways Curator's LeaderLatch has been caught out:
 * cut for longer than its session, which expires while it is cut off, then healed (the old
 * session's node must never again be taken for its own); cut for longer than the election's
 * ttl but not the session (suspended, then reconnected to the same session: it stepped down,
 * and must not resume leading on reconnection); and cut for a moment, which costs nothing. In
 * each, the leader must be told before anybody else is elected, on the machine's clock.
 */
describe('leader election on ZooKeeper: a leader cut off from the server', () => {
  let zookeeper: ZooKeeperServer;
  let root: string;
  let resource: FencedResource;
  let processes: LeaderProcess[];
  let proxies: TcpProxy[];

  beforeAll(async () => {
    zookeeper = await ZooKeeperServer.start();
  }, 60_000);

  afterAll(async () => {
    await zookeeper.stop();
  });

  beforeEach(async () => {
    root = `/leader-cut-${randomBytes(4).toString('hex')}`;
    resource = new FencedResource();
    proxies = await Promise.all([1, 2, 3].map(() => TcpProxy.start(zookeeper.port)));
    processes = await Promise.all(
      proxies.map((proxy, i) =>
        LeaderProcess.start(
          i + 1,
          {
            zookeeper: {
              connectionString: `127.0.0.1:${proxy.port}`,
              sessionTimeout: SESSION,
              root,
            },
          },
          TTL,
          resource,
        ),
      ),
    );
  }, 60_000);

  afterEach(async () => {
    for (const proxy of proxies) proxy.resume();
    await Promise.all(processes.map((process) => process.close()));
    await Promise.all(proxies.map((proxy) => proxy.stop()));
    const tree = await ZooKeeperTree.connect(zookeeper.address);
    try {
      expect(await tree.below(root)).toEqual([]);
    } finally {
      tree.close();
    }
  }, 30_000);

  const leaders = () => processes.filter((process) => process.leading);
  const theLeader = async () => {
    await until(async () => leaders().length === 1, 20_000);
    return leaders()[0];
  };
  const leaderAfter = async (epoch: number) => {
    const later = () => processes.find((p) => p.terms.some((e) => e > epoch));
    await until(async () => later() !== undefined, 20_000);
    return later() as LeaderProcess;
  };
  const current = (process: LeaderProcess) => process.terms[process.terms.length - 1];
  const proxyOf = (process: LeaderProcess) => proxies[process.id - 1];

  it('told within its validity, before the next leader, when its session expires while cut off; never leads on the old session after healing', async () => {
    const leader = await theLeader();
    const epoch = current(leader);
    proxyOf(leader).stall();
    const next = await leaderAfter(epoch);
    // The server expired the old session: it let the next one in.
    expect(leader.event('abort', epoch)?.at).toBeLessThan(next.event('lead', current(next))!.at);
    // Healed: what was held is dropped, and the client learns its session expired.
    proxyOf(leader).cut();
    proxyOf(leader).resume();
    await sleep(2 * SESSION);
    expect(leaders()).toEqual([next]);
    expect(leader.terms).toEqual([epoch]);
    // It stands again, with a new session: the next resignation can make it leader.
    await next.resign();
    const after = await leaderAfter(current(next));
    await sleep(300);
    expect(leaders()).toEqual([after]);
    expect(violationsOf(processes, resource)).toEqual([]);
  }, 60_000);

  it('steps down when cut off past its ttl but not its session, and does not lead again on reconnecting', async () => {
    const leader = await theLeader();
    const epoch = current(leader);
    proxyOf(leader).stall();
    await until(async () => leader.event('abort', epoch) !== undefined, 10_000);
    await sleep(TTL / 2);
    // Reconnected within the session: its calls held meanwhile go through, its release among them.
    proxyOf(leader).resume();
    const next = await leaderAfter(epoch);
    expect(next).not.toBe(leader);
    expect(leader.event('abort', epoch)!.at).toBeLessThan(next.event('lead', current(next))!.at);
    await sleep(TTL);
    expect(leaders()).toEqual([next]);
    expect(violationsOf(processes, resource)).toEqual([]);
  }, 60_000);

  it('keeps leading through a cut shorter than its validity', async () => {
    const leader = await theLeader();
    const epoch = current(leader);
    proxyOf(leader).stall();
    await sleep(TTL / 4);
    proxyOf(leader).resume();
    await sleep(2 * TTL);
    expect(leaders()).toEqual([leader]);
    expect(processes.flatMap((process) => process.terms)).toEqual([epoch]);
  }, 60_000);
});

describe('leader election on ZooKeeper: a ttl the session cannot carry', () => {
  let zookeeper: ZooKeeperServer;

  beforeAll(async () => {
    zookeeper = await ZooKeeperServer.start();
  }, 60_000);

  afterAll(async () => {
    await zookeeper.stop();
  });

  it('is reported once the app has booted, and the instance does not stand', async () => {
    const terms: number[] = [];
    @Injectable()
    class TooLong {
      @Leader('too-long', { ttl: SESSION })
      work({ epoch }: Leadership) {
        terms.push(epoch);
      }
    }
    const warnings: string[] = [];
    const root = `/leader-ttl-${randomBytes(4).toString('hex')}`;
    const module = await Test.createTestingModule({
      imports: [
        LockModule.forRoot({
          zookeeper: { connectionString: zookeeper.address, sessionTimeout: SESSION, root },
        }),
      ],
      providers: [TooLong],
    }).compile();
    module.useLogger({
      log: () => undefined,
      error: () => undefined,
      warn: (message: unknown) => void warnings.push(String(message)),
    });
    await module.init();
    try {
      await until(async () => warnings.some((w) => w.includes('cannot stand')), 10_000);
      await sleep(1_500);
      expect(warnings.filter((w) => w.includes('"too-long"'))).toEqual([
        expect.stringMatching(/cannot stand: .*"ttl": expected at most 2000 ms on ZooKeeper/),
      ]);
      expect([terms, module.get(LeaderService).isLeader('too-long')]).toEqual([[], false]);
    } finally {
      await module.close();
    }
  }, 30_000);
});
