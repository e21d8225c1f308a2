/**
 * The multi-process safety checker (issue 6): P worker processes contend for one lock key and
 * run a non-atomic read-modify-write of a counter that lives here, in the checker's process,
 * behind a fencing guard; a nemesis injects faults while they run; the history is then checked
 * (see analyze.mjs).
 *
 * Faults, each aimed at the worker that is inside the critical section (the checker intercepts
 * its read of the resource, so the victim certainly holds the lock):
 * - `kill`: SIGKILL the holder; a replacement worker is forked. Nobody may get the lock before
 *   the killed holder's key expires in Redis (its PTTL is read right after the kill).
 * - `stop`: SIGSTOP the holder, answer its read while it is stopped, wait past its TTL until
 *   another holder has written, then SIGCONT. Its signal must abort, its stale write must be
 *   refused by the guard, and `using` must reject with LockLostError.
 * - `restart`: kill -9 the lock's redis-server and start it again, empty, on the same port
 *   while a holder is inside. The holder must be told (signal aborted, LockLostError), and work
 *   must go on.
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { analyze } from './analyze.mjs';
import { FencedCounter } from './resource.mjs';

const WORKER_PATH = fileURLToPath(new URL('./worker.mjs', import.meta.url));
const BUILT_LIBRARY = fileURLToPath(new URL('../../../dist/index.js', import.meta.url));

/** @typedef {'kill' | 'stop' | 'restart'} FaultKind */
export const FAULT_KINDS = /** @type {const} */ (['kill', 'stop', 'restart']);

/**
 * @typedef {object} CheckerOptions
 * @property {{ url: string, port: number, restart(): Promise<void> }} redis the lock's Redis
 *   (a RedisServer from test/support/redis-server.js); the checker restarts it, never stops it
 * @property {number} [workers] P, the number of worker processes alive at any time (≥ 6)
 * @property {number} [ttl] the lock's TTL in ms
 * @property {FaultKind[]} [faults] the faults to inject, in order
 * @property {number} [durationMs] keep injecting faults (cycling through `faults`) until then
 * @property {number} [gapMs] quiet time before each fault
 * @property {number} [tailMs] quiet time after the last fault
 * @property {boolean} [fenceReads] whether the resource fences reads too (default true)
 * @property {(line: string) => void} [log] progress lines
 */

/**
 * @typedef {object} Section One critical section, as the checker saw it.
 * @property {number} worker
 * @property {number} token the lock's fencing token
 * @property {number} acquiredSeq
 * @property {number} acquiredAt
 * @property {number} [readSeq]
 * @property {boolean} [readAccepted]
 * @property {number} [writeSeq]
 * @property {boolean} [writeAccepted]
 * @property {boolean} [signalAbortedAtWrite]
 * @property {number} [lostSeq] when the worker reported its signal aborted
 * @property {number} [lostAt]
 * @property {string} [lostReason]
 * @property {number} [releasedSeq]
 * @property {string} [outcome] 'ok' or the name of the error `using` rejected with
 * @property {FaultKind} [fault] the fault this section was the victim of
 */

/**
 * @typedef {object} Fault
 * @property {FaultKind} kind
 * @property {number} worker the victim
 * @property {number} token the victim's fencing token
 * @property {number} startSeq
 * @property {number} [endSeq]
 * @property {number} startedAt
 * @property {string[]} problems what went wrong (violations)
 * @property {Record<string, unknown>} facts what was measured
 */

/** @param {number} ms */
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

class WorkerHandle {
  /**
   * @param {number} id
   * @param {import('node:child_process').ChildProcess} child
   */
  constructor(id, child) {
    this.id = id;
    this.child = child;
    this.stderr = '';
    this.ready = false;
    this.exited = false;
    /** The checker killed it on purpose, or told it to stop. */
    this.expectedExit = false;
    this.stopped = false;
  }
}

export class SafetyChecker {
  /** @param {CheckerOptions} options */
  constructor(options) {
    this.redis = options.redis;
    this.workerCount = Math.max(6, options.workers ?? 6);
    this.ttl = options.ttl ?? 400;
    this.faultPlan = options.faults ?? [...FAULT_KINDS];
    this.durationMs = options.durationMs ?? 0;
    this.gapMs = options.gapMs ?? 600;
    this.tailMs = options.tailMs ?? 500;
    this.log = options.log ?? (() => undefined);
    this.keyPrefix = `checker:${process.pid}:${Date.now().toString(36)}:`;
    this.key = 'counter';
    this.resource = new FencedCounter({ fenceReads: options.fenceReads ?? true });
    this.seq = 0;
    /** @type {Map<number, WorkerHandle>} */
    this.workers = new Map();
    this.nextWorkerId = 1;
    this.processesStarted = 0;
    /** @type {Map<string, Section>} */
    this.sections = new Map();
    /** @type {Section[]} */
    this.sectionList = [];
    /** @type {Fault[]} */
    this.faults = [];
    /** @type {string[]} */
    this.violations = [];
    /** @type {Record<string, number>} */
    this.acquireFailures = {};
    /** Duplicate fencing tokens handed out (to two acquisitions). */
    this.duplicateTokens = 0;
    /** @type {((worker: WorkerHandle, message: any) => void) | undefined} */
    this.interceptRead = undefined;
    /** @type {Set<() => void>} */
    this.listeners = new Set();
    /** @type {Redis | undefined} */
    this.probe = undefined;
  }

  /** Runs the whole thing and returns the analysis (it does not throw on violations). */
  async run() {
    if (!existsSync(BUILT_LIBRARY)) {
      throw new Error(
        `The safety checker's worker processes import the built library (${BUILT_LIBRARY}), ` +
          'which is missing: run `npm run build` first.',
      );
    }
    const startedAt = Date.now();
    this.probe = new Redis(this.redis.url, { maxRetriesPerRequest: 2, lazyConnect: true });
    this.probe.on('error', () => undefined);
    try {
      await Promise.all(Array.from({ length: this.workerCount }, () => this.spawnWorker()));
      this.log(`${this.workerCount} workers up after ${Date.now() - startedAt} ms`);
      await this.nemesis();
      await sleep(this.tailMs);
    } catch (error) {
      this.violations.push(`checker aborted: ${error instanceof Error ? error.stack : error}`);
    } finally {
      await this.shutdown();
      this.probe.disconnect();
    }
    return analyze(this, Date.now() - startedAt);
  }

  // ---- workers -------------------------------------------------------------------------------

  /** Forks one worker and resolves once its Nest context is up. */
  async spawnWorker() {
    const id = this.nextWorkerId++;
    const child = fork(WORKER_PATH, [], {
      execArgv: [],
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      env: {
        ...process.env,
        CHECKER_REDIS_URL: this.redis.url,
        CHECKER_KEY: this.key,
        CHECKER_KEY_PREFIX: this.keyPrefix,
        CHECKER_TTL: String(this.ttl),
        CHECKER_WAIT_TIMEOUT: '5000',
        CHECKER_COMMAND_TIMEOUT: '1000',
      },
    });
    this.processesStarted++;
    const worker = new WorkerHandle(id, child);
    this.workers.set(id, worker);
    child.stderr?.on('data', (chunk) => {
      worker.stderr = (worker.stderr + chunk.toString()).slice(-4000);
    });
    child.on('message', (message) => this.onMessage(worker, message));
    child.on('exit', (code, signal) => {
      worker.exited = true;
      this.workers.delete(id);
      if (!worker.expectedExit) {
        this.violations.push(
          `worker ${id} exited unexpectedly (code ${code}, signal ${signal}): ` +
            worker.stderr.trim().slice(-1000),
        );
      }
      this.notify();
    });
    await this.waitFor(
      () => worker.ready || worker.exited,
      60_000,
      `worker ${id} did not boot within 60 s`,
    );
    if (!worker.ready) throw new Error(`worker ${id} died while booting: ${worker.stderr.trim()}`);
    return worker;
  }

  /**
   * @param {WorkerHandle} worker
   * @param {any} message
   */
  onMessage(worker, message) {
    const seq = ++this.seq;
    const now = Date.now();
    const id = worker.id;
    switch (message?.type) {
      case 'ready':
        worker.ready = true;
        break;
      case 'acquired': {
        const key = `${id}:${message.token}`;
        if (this.sectionList.some((s) => s.token === message.token)) this.duplicateTokens++;
        /** @type {Section} */
        const section = { worker: id, token: message.token, acquiredSeq: seq, acquiredAt: now };
        this.sections.set(key, section);
        this.sectionList.push(section);
        break;
      }
      case 'read': {
        const intercept = this.interceptRead;
        if (intercept && !worker.expectedExit) {
          this.interceptRead = undefined;
          intercept(worker, message);
        } else {
          this.serveRead(worker, message);
        }
        break;
      }
      case 'write': {
        const section = this.section(id, message.token);
        const accepted = this.resource.write(id, message.token, message.value, seq);
        if (section) {
          section.writeSeq = seq;
          section.writeAccepted = accepted;
          section.signalAbortedAtWrite = message.signalAbortedAtWrite;
        }
        this.reply(worker, message.requestId, { ok: accepted });
        break;
      }
      case 'lost': {
        const section = this.section(id, message.token);
        if (section && section.lostSeq === undefined) {
          section.lostSeq = seq;
          section.lostAt = now;
          section.lostReason = message.reason;
        }
        break;
      }
      case 'released': {
        const section = this.section(id, message.token);
        if (section) {
          section.releasedSeq = seq;
          section.outcome = message.outcome;
        }
        break;
      }
      case 'acquireFailed':
        this.acquireFailures[message.error] = (this.acquireFailures[message.error] ?? 0) + 1;
        break;
      default:
        break;
    }
    this.notify();
  }

  /**
   * @param {number} worker
   * @param {number} token
   */
  section(worker, token) {
    return this.sections.get(`${worker}:${token}`);
  }

  /**
   * Handles a read now: the fencing guard decides, the worker gets the value.
   * @param {WorkerHandle} worker
   * @param {any} message
   */
  serveRead(worker, message) {
    const seq = ++this.seq;
    const result = this.resource.read(worker.id, message.token, seq);
    const section = this.section(worker.id, message.token);
    if (section) {
      section.readSeq = seq;
      section.readAccepted = result.ok;
    }
    this.reply(worker, message.requestId, result);
    this.notify();
  }

  /**
   * @param {WorkerHandle} worker
   * @param {number} requestId
   * @param {Record<string, unknown>} fields
   */
  reply(worker, requestId, fields) {
    if (worker.exited || !worker.child.connected) return;
    worker.child.send({ type: 'reply', requestId, ...fields }, (error) => {
      if (error && !worker.expectedExit)
        this.violations.push(`reply to worker ${worker.id}: ${error}`);
    });
  }

  notify() {
    for (const listener of [...this.listeners]) listener();
  }

  /**
   * Resolves `true` once `condition()` holds (checked on every event and every 50 ms), or
   * `false` after `timeoutMs`, recording `problem` as a violation if given.
   * @param {() => boolean} condition
   * @param {number} timeoutMs
   * @param {string} [problem]
   */
  async waitFor(condition, timeoutMs, problem) {
    if (condition()) return true;
    const ok = await new Promise((resolve) => {
      /** @type {NodeJS.Timeout | undefined} */
      let poll;
      const done = (/** @type {boolean} */ result) => {
        this.listeners.delete(check);
        clearTimeout(timer);
        clearInterval(poll);
        resolve(result);
      };
      const check = () => {
        if (condition()) done(true);
      };
      const timer = setTimeout(() => done(false), timeoutMs);
      poll = setInterval(check, 50);
      this.listeners.add(check);
    });
    if (!ok && problem) this.violations.push(problem);
    return ok;
  }

  /** Accepted writes so far. */
  acceptedWrites() {
    return this.resource.log.filter((e) => e.op === 'write' && e.accepted).length;
  }

  /**
   * Whether some write after `seq` was accepted.
   * @param {number} seq
   * @param {number} [aboveToken] and carried a token above this one
   */
  acceptedWriteSince(seq, aboveToken = 0) {
    const log = this.resource.log;
    for (let i = log.length - 1; i >= 0 && log[i].seq > seq; i--) {
      if (log[i].op === 'write' && log[i].accepted && log[i].token > aboveToken) return true;
    }
    return false;
  }

  // ---- the nemesis ---------------------------------------------------------------------------

  async nemesis() {
    const deadline = Date.now() + this.durationMs;
    let round = 0;
    do {
      for (const kind of this.faultPlan) {
        await sleep(this.gapMs * (0.5 + Math.random()));
        await this.inject(kind);
      }
      round++;
    } while (Date.now() < deadline);
    this.log(`nemesis done after ${round} round(s), ${this.faults.length} faults`);
  }

  /** @param {FaultKind} kind */
  async inject(kind) {
    // Aim at the worker that is inside the critical section: take over its next read.
    /** @type {{ worker: WorkerHandle, message: any } | undefined} */
    let victim;
    this.interceptRead = (worker, message) => (victim = { worker, message });
    const armed = await this.waitFor(
      () => victim !== undefined,
      20_000,
      `no worker reached the critical section within 20 s (before a ${kind} fault)`,
    );
    this.interceptRead = undefined;
    if (!armed || !victim) return;
    const section = this.section(victim.worker.id, victim.message.token);
    if (section) section.fault = kind;
    /** @type {Fault} */
    const fault = {
      kind,
      worker: victim.worker.id,
      token: victim.message.token,
      startSeq: ++this.seq,
      startedAt: Date.now(),
      problems: [],
      facts: {},
    };
    this.faults.push(fault);
    if (kind === 'kill') await this.kill(fault, victim.worker);
    else if (kind === 'stop') await this.stop(fault, victim.worker, victim.message);
    else await this.restartRedis(fault, victim.worker, victim.message);
    fault.endSeq = ++this.seq;
    // Nothing hangs: work must go on after every fault.
    const endSeq = fault.endSeq;
    const progressed = await this.waitFor(() => this.acceptedWriteSince(endSeq), 20_000);
    if (!progressed) fault.problems.push('no critical section was accepted within 20 s after it');
    this.violations.push(
      ...fault.problems.map((p) => `${kind} fault #${this.faults.length}: ${p}`),
    );
    this.log(
      `${kind} of worker ${fault.worker}: ${fault.problems.length ? fault.problems.join('; ') : 'ok'}`,
    );
  }

  /**
   * SIGKILL a holder. Its key must outlive it by its TTL: nobody else may acquire before the
   * key's expiry as Redis reported it right after the kill.
   * @param {Fault} fault
   * @param {WorkerHandle} worker
   */
  async kill(fault, worker) {
    worker.expectedExit = true;
    worker.child.kill('SIGKILL');
    const killSeq = this.seq;
    const probeSentAt = Date.now();
    /** @type {number} */
    let pttl = -3;
    try {
      pttl = await /** @type {Redis} */ (this.probe).pttl(this.keyPrefix + this.key);
    } catch {
      // Unknown; the check below then only asks for a takeover.
    }
    // Redis computed the PTTL at or after probeSentAt (same machine, same clock).
    const expiresNoEarlierThan = pttl > 0 ? probeSentAt + pttl : undefined;
    fault.facts.pttlAfterKill = pttl;
    const replacement = this.spawnWorker().catch((/** @type {unknown} */ error) => {
      fault.problems.push(`replacement worker failed: ${error}`);
    });
    const next = () =>
      this.sectionList.find((s) => s.acquiredSeq > killSeq && s.worker !== worker.id);
    const taken = await this.waitFor(() => next() !== undefined, 20_000);
    const successor = next();
    if (!taken || !successor) {
      fault.problems.push('nobody acquired the lock within 20 s after its holder was killed');
    } else {
      fault.facts.takeoverAfterKillMs = successor.acquiredAt - fault.startedAt;
      // 2 ms of slack for Redis's and Date.now()'s millisecond rounding.
      if (expiresNoEarlierThan !== undefined && successor.acquiredAt < expiresNoEarlierThan - 2) {
        fault.problems.push(
          `worker ${successor.worker} acquired ${expiresNoEarlierThan - successor.acquiredAt} ms ` +
            "before the killed holder's key could have expired",
        );
      }
    }
    await replacement;
  }

  /**
   * SIGSTOP a holder for longer than its TTL (until another holder has written), answer its
   * read while it sleeps, then SIGCONT and watch what it does.
   * @param {Fault} fault
   * @param {WorkerHandle} worker
   * @param {any} read
   */
  async stop(fault, worker, read) {
    worker.child.kill('SIGSTOP');
    worker.stopped = true;
    // The read is handled while the holder is stopped but still holds the lock; the reply
    // waits in the pipe.
    this.serveRead(worker, read);
    const stoppedAt = Date.now();
    const tookOver = await this.waitFor(
      () => Date.now() - stoppedAt >= 2 * this.ttl && this.acceptedWriteSince(0, fault.token),
      20_000,
    );
    if (!tookOver) {
      fault.problems.push('no other worker took over within 20 s while the holder was stopped');
    }
    fault.facts.stoppedMs = Date.now() - stoppedAt;
    worker.child.kill('SIGCONT');
    worker.stopped = false;
    const section = this.section(worker.id, fault.token);
    const settled = await this.waitFor(() => section?.releasedSeq !== undefined, 15_000);
    if (!section || !settled) {
      fault.problems.push('the woken holder did not finish its critical section within 15 s');
      return;
    }
    fault.facts.signalAbortedAtWrite = section.signalAbortedAtWrite;
    fault.facts.outcome = section.outcome;
    if (section.lostSeq === undefined)
      fault.problems.push("the woken holder's signal never aborted");
    if (section.writeAccepted) fault.problems.push("the woken holder's stale write was accepted");
    if (section.outcome !== 'LockLostError') {
      fault.problems.push(
        `the woken holder's using() ended with ${section.outcome}, not LockLostError`,
      );
    }
  }

  /**
   * Restart the lock's redis-server (kill -9, start again empty on the same port) while a holder
   * is inside; it must be told its lock is lost before it goes on.
   * @param {Fault} fault
   * @param {WorkerHandle} worker
   * @param {any} read
   */
  async restartRedis(fault, worker, read) {
    const before = Date.now();
    await this.redis.restart();
    fault.facts.restartMs = Date.now() - before;
    const section = this.section(worker.id, fault.token);
    const told = await this.waitFor(() => section?.lostSeq !== undefined, 4 * this.ttl + 5_000);
    if (!told) fault.problems.push("the holder's signal was not aborted after Redis restarted");
    fault.facts.lostReason = section?.lostReason;
    this.serveRead(worker, read);
    const settled = await this.waitFor(() => section?.releasedSeq !== undefined, 15_000);
    if (!section || !settled) {
      fault.problems.push('the holder did not finish its critical section within 15 s');
      return;
    }
    fault.facts.outcome = section.outcome;
    if (section.outcome !== 'LockLostError') {
      fault.problems.push(`the holder's using() ended with ${section.outcome}, not LockLostError`);
    }
  }

  // ---- shutdown ------------------------------------------------------------------------------

  /** Tells every worker to stop, waits for each to close its app and exit; kills stragglers. */
  async shutdown() {
    this.interceptRead = undefined;
    const workers = [...this.workers.values()];
    await Promise.all(
      workers.map(async (worker) => {
        if (worker.exited) return;
        worker.expectedExit = true;
        if (worker.stopped) worker.child.kill('SIGCONT');
        const exited = once(worker.child, 'exit');
        if (worker.child.connected) worker.child.send({ type: 'stop' }, () => undefined);
        const timer = setTimeout(() => {
          this.violations.push(`worker ${worker.id} did not shut down within 20 s`);
          worker.child.kill('SIGKILL');
        }, 20_000);
        await exited;
        clearTimeout(timer);
      }),
    );
  }
}
