import { QUEUE_LEASE } from '../../src/store/lock-store.interface.js';
import { RedisLikeBackend, type Backend } from './backend.js';
import { Checker, LONGEST_TTL, type KeyKind, type Violation } from './checker.js';
import { Nemesis, scheduleFaults } from './faults.js';
import { Instance, KEY_PREFIX, type InstanceOptions } from './instance.js';
import { ELECTION, ELECTION_KEY, stand } from './leader.js';
import { Network, type NetworkShape } from './network.js';
import { Random } from './random.js';
import { Names, type StoreSeen } from './sim-store.js';
import { scheduleStoreLoss } from './store-loss.js';
import { scheduleForceReleases } from './operator.js';
import { ThrottleWindows } from './throttle-windows.js';
import { ReleasesAnswered } from './releases-answered.js';
import { TurnsTaken } from './turns-taken.js';
import { Caller, type CallerRun } from './workload.js';
import { World } from './world.js';
import { ZooKeeperBackend } from './zk-backend.js';

/** What one seed did. */
export interface SeedResult {
  seed: number;
  violation?: Violation;
  /** Each event with its virtual time, when the run recorded them. */
  trace: string[];
  /** Virtual ms the run took. */
  virtualMs: number;
}

/** Past this virtual time a run is stuck: nothing it does takes this long. */
const LIMIT = 300_000;
/** How much of `driftFactor` the instances' clocks drift by, at most (above 1: beyond it). */
const DRIFT_SHARE = 1;
/** How long the engine keeps a subscription that nobody waits on (see `Waiters.linger`). */
const LINGER = 5_000;
/** The longest TTL a caller asks for. */
const MAX_TTL = LONGEST_TTL;

/** Runs one seed: its instances, callers and faults, every invariant checked on the way. */
export async function runSeed(seed: number, record = false): Promise<SeedResult> {
  const random = new Random(seed);
  const world = new World(random.fork(), record);
  const instances: Instance[] = [];
  try {
    // Drawn apart from the run's other choices, which stay those of a Redis-like seed.
    const zooKeeper = new Random(Math.imul(seed, 0x9e3779b1) ^ 0x5bd1e995);
    const losses = new Random(Math.imul(seed, 0x85ebca6b) ^ 0xc2b2ae35);
    const operator = new Random(Math.imul(seed, 0x27d4eb2f) ^ 0x165667b1);
    const violation = await simulate(world, random, instances, { zooKeeper, losses, operator });
    return { seed, violation, trace: world.trace, virtualMs: world.now() };
  } finally {
    for (const instance of instances) instance.dispose();
    world.uninstall();
  }
}

async function simulate(
  world: World,
  random: Random,
  instances: Instance[],
  { zooKeeper, losses, operator }: Record<'zooKeeper' | 'losses' | 'operator', Random>,
): Promise<Violation | undefined> {
  // A quiet run has no faults, and no message lost or late by more than a lease's fraction:
  // there, fair mode must also serve its line in order.
  const quiet = random.chance(0.25);
  const shape: NetworkShape = {
    minLatency: random.int(0, 2),
    maxLatency: random.int(2, 30),
    spikeChance: quiet ? 0 : random.pick([0, 0.02, 0.1]),
    spike: random.int(10, 1_200),
    noticeLoss: quiet ? 0 : random.pick([0, 0, 0.05, 0.3]),
    noticeLag: quiet ? 0 : random.pick([0, 0, 300, 1_500]),
  };
  const network = new Network(world, random.fork(), shape);
  const options: InstanceOptions = {
    fair: random.chance(0.7),
    ttl: random.int(100, 1_000),
    waitTimeout: random.int(0, 2_000),
    commandTimeout: random.int(100, 1_000),
    shutdownGrace: random.pick([0, random.int(1, 2_000)]),
    driftFactor: random.pick([0.01, 0.01, 0.05]),
  };
  const kinds = new Map<string, KeyKind>([['m0', { type: 'mutex' }]]);
  if (random.chance(0.5)) kinds.set('m1', { type: 'mutex' });
  if (random.chance(0.5)) kinds.set('s0', { type: 'semaphore', limit: random.int(2, 3) });
  if (random.chance(0.5)) kinds.set('rw0', { type: 'rw' });
  if (random.chance(0.4)) kinds.set('t0', { type: 'mutex', throttle: true });
  // A ZooKeeper-like seed: sequential nodes always serve waiters in order.
  const sessionTimeout = zooKeeper.chance(0.3) ? zooKeeper.int(3_000, 6_000) : undefined;
  if (sessionTimeout) zooKeeperKeys(options, kinds, zooKeeper);
  const described = { quiet, ...shape, ...options, keys: [...kinds.keys()], sessionTimeout };
  world.log(`seed   ${JSON.stringify(described)}`);

  const names = new Names();
  const checker = new Checker(world, kinds);
  if (quiet && !sessionTimeout) {
    checker.throttles = new ThrottleWindows(shape.maxLatency, options.driftFactor);
  }
  if (quiet && options.fair) {
    // A turn is reserved for at most the waiter's TTL: one shorter than the notice's way to it
    // and its attempt's way back lapses before the waiter can take it up.
    const name = (token: string) => names.of(token);
    const minTtl = 2 * shape.maxLatency + 10;
    checker.lineOrder = { name, prefix: KEY_PREFIX, minTtl };
    checker.turns = new TurnsTaken(world, 2 * shape.maxLatency + 1, (token, key) =>
      checker.fail('turn taken up', `${name(token)} let its turn on ${key} lapse`),
    );
  }
  const releases =
    quiet && !options.fair
      ? new ReleasesAnswered(world, 2 * shape.maxLatency + 1, checker.calls, (instance, key) =>
          checker.fail('release answered', `nobody of ${instance} answered a release of ${key}`),
        )
      : undefined;
  const seen: StoreSeen = {
    attempted: (key, token, reply, asked) => {
      releases?.attempted(key.slice(KEY_PREFIX.length), token);
      checker.storeAttempted(key, token, reply, asked);
    },
    granted: (key, token, fence) => checker.storeGranted(key, token, fence),
    leftLine: (key, token) => checker.storeLeftLine(key, token),
    released: (key, token) => checker.throttles?.released(key, token),
    renewed: (_key, token, ttl) => {
      checker.storeWrote(token, ttl);
      checker.throttles?.renewed(token, ttl, world.now());
    },
    transferred: (_key, token, ttl) => checker.storeWrote(token, ttl),
    turned: (key, token, fencingToken) => checker.storeTurned(key, token, fencingToken),
    told: (_key, token) => checker.turns?.told(token),
    heardRelease: (key, instance) => releases?.heard(key.slice(KEY_PREFIX.length), instance),
    evicted: (_key, tokens) => checker.storeEvicted(tokens),
    refused: (token) => checker.storeRefused(token),
    heardRefusal: (token) => checker.heardRefusal(token),
  };
  const backend: Backend = sessionTimeout
    ? new ZooKeeperBackend(network, names, seen, sessionTimeout, checker)
    : new RedisLikeBackend(network, names, seen);
  for (let i = random.int(2, 4); i > 0; i--) {
    const drift = options.driftFactor * DRIFT_SHARE * (2 * random.next() - 1);
    const clock = { rate: 1 + drift, offset: random.int(0, 100_000) };
    const name = `i${instances.length}`;
    instances.push(new Instance(name, network, backend, options, clock));
    world.log(`clock  ${name} runs at ${clock.rate.toFixed(5)} from ${clock.offset}`);
  }
  const faults = scheduleFaults(instances, network, random.fork(), quiet, (detail) =>
    checker.fail('unexpected error', `shutdown: ${detail}`),
  );
  if (backend instanceof RedisLikeBackend) {
    checker.storeHolds = (key, token) => backend.holds(key, token);
  }
  // Drawn apart, as the ZooKeeper choice is, so that the runs without a loss stay as they were.
  const down =
    backend instanceof RedisLikeBackend && !quiet && losses.chance(0.3)
      ? scheduleStoreLoss(backend.space, network, losses, (since) => checker.storeLost(since))
      : 0;
  if (backend instanceof RedisLikeBackend && !quiet && operator.chance(0.2)) {
    scheduleForceReleases(world, instances, kinds, operator, (detail) =>
      checker.fail('unexpected error', `forceRelease: ${detail}`),
    );
  }
  const latest = 2 * (shape.maxLatency + shape.spike) + shape.noticeLag;
  checker.slack = 2 * options.commandTimeout + faults.total + down + latest + 100;
  if (random.chance(0.5)) {
    kinds.set(ELECTION, { type: 'mutex' });
    for (const instance of instances) {
      instance.elections = stand(instance, world, random.fork(), checker);
    }
  }
  const nemesis = new Nemesis(network, quiet ? undefined : random.fork(), (ms) => {
    checker.slack += ms;
  });
  const run: CallerRun = {
    world,
    kinds,
    checker,
    peers: instances,
    sent: (instance, what) => nemesis.sent(instance, what),
  };
  const callers: Caller[] = [];
  for (const instance of instances) {
    for (let c = random.int(1, 3); c > 0; c--) {
      const name = `${instance.name}.c${callers.length}`;
      callers.push(new Caller(name, instance, random.fork(), run));
    }
  }
  for (const caller of callers) caller.start(random.int(1, 8));

  const live = () => instances.filter((instance) => !instance.crashed);
  await runUntil(
    world,
    checker,
    () =>
      callers.every((caller) => caller.done || caller.instance.crashed) &&
      instances.every((instance) => instance.adopting === 0 || instance.crashed),
  );
  if (checker.violation) return checker.violation;
  // Nobody waits any more: once what is on its way has arrived, and the subscriptions kept
  // for a next waiter have lingered, nobody listens either.
  await world.clock.tickAsync(LINGER + checker.slack);
  checker.check();
  const listened = backend.listened().filter((key) => key !== ELECTION_KEY);
  if (listened.length > 0) {
    const keys = listened.join(', ');
    checker.fail('leftovers', `listened to with nobody waiting: ${keys}`);
  }
  if (checker.violation) return checker.violation;
  let stopped = 0;
  for (const instance of live()) {
    world
      .within(instance, () => instance.close())
      .then(
        () => stopped++,
        (error: unknown) =>
          checker.fail('unexpected error', `${instance.name}'s shutdown: ${String(error)}`),
      );
  }
  world.log('end    shutting down');
  await runUntil(world, checker, () => stopped === live().length);
  if (checker.violation) return checker.violation;
  await world.clock.tickAsync(MAX_TTL + QUEUE_LEASE);
  await runUntil(world, checker, () => world.clock.countTimers() === 0);
  leftovers(world, checker, backend);
  return checker.violation;
}

/** Runs timers until `done`; a run with nothing left to run, or past the limit, is stuck. */
async function runUntil(world: World, checker: Checker, done: () => boolean): Promise<void> {
  await world.clock.tickAsync(0);
  while (!done() && !checker.violation) {
    if (world.clock.countTimers() === 0 || world.now() > LIMIT) {
      checker.fail('progress', 'the run has nothing left to do, yet a caller or shutdown waits');
      return;
    }
    await world.step();
    checker.check();
  }
}

/** Once everything has shut down and every TTL has run out: no timer, nothing at the store. */
function leftovers(world: World, checker: Checker, backend: Backend): void {
  const timers = world.clock.countTimers();
  if (timers > 0) checker.fail('leftovers', `${timers} timers left`);
  backend.leftovers((detail) => checker.fail('leftovers', detail));
}

/**
 * A ZooKeeper-like seed: sequential nodes always serve waiters in order; and a read-write lock
 * in most, often with the mutex alone beside it, where a writer's departure wakes a process's
 * readers at once (a turn is announced once there).
 */
function zooKeeperKeys(options: InstanceOptions, kinds: Map<string, KeyKind>, random: Random) {
  options.fair = true;
  if (!random.chance(0.8)) return;
  kinds.set('rw0', { type: 'rw' });
  if (random.chance(0.5)) for (const key of ['m1', 's0']) kinds.delete(key);
}
