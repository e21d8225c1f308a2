import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import type {
  AcquireOptions,
  LockHandle,
  LockModuleOptions,
  LockService,
} from '../../src/index.js';

const LOCK_PROCESS = fileURLToPath(new URL('./lock-process.mjs', import.meta.url));
const HIDE_PACKAGES = fileURLToPath(new URL('./hide-packages.mjs', import.meta.url));

/** A lock as a test holds it, whichever process its caller runs in. */
export interface HeldLock {
  readonly fencingToken: number;
  release(): Promise<boolean>;
  /**
   * Releases the lock and asks for it again in the same process as soon as the release has
   * answered: the new acquisition.
   */
  again(): Promise<HeldLock>;
}

/** An app instance as a test drives its callers: in a process of its own, or in the test's. */
export interface Contender {
  acquire(key: string, options?: AcquireOptions): Promise<HeldLock>;
  /** How many callers wait for `key` in the store's line, as `LockService.inspect` tells. */
  waiting(key: string): Promise<number>;
}

/** An app instance of the test's own process (for the memory store, which other processes do not share). */
export function inProcess(locks: LockService): Contender {
  const acquire = async (key: string, options?: AcquireOptions): Promise<HeldLock> => {
    const lock = await locks.acquire(key, options);
    return {
      fencingToken: lock.fencingToken,
      release: () => lock.release(),
      again: () => lock.release().then(() => acquire(key, options)),
    };
  };
  return { acquire, waiting: async (key) => (await locks.inspect(key)).waiting };
}

type Answer = {
  id: number;
  acquired?: number;
  released?: boolean;
  waiting?: number;
  error?: string;
};

/**
 * An app instance in a process of its own (`lock-process.mjs`), with its own LockModule and
 * connections: what another replica of an app is to the store. Module options must survive
 * JSON (no `Infinity`, no client instances).
 */
export class LockProcess implements Contender {
  private nextId = 0;
  private readonly pending = new Map<number, (answer: Answer) => void>();

  private constructor(private readonly child: ChildProcess) {
    child.on('message', (answer: Answer) => {
      const settle = this.pending.get(answer.id);
      this.pending.delete(answer.id);
      settle?.(answer);
    });
    child.on('exit', () => {
      for (const settle of this.pending.values()) settle({ id: -1, error: 'the process exited' });
      this.pending.clear();
    });
  }

  /**
   * Starts a process with `LockModule.forRoot(options)`, once it has booted.
   * @param hide packages the process must not find, as if they were not installed
   * @throws Error with the boot's error when the process does not boot
   */
  static async start(options: LockModuleOptions, hide: string[] = []): Promise<LockProcess> {
    const child = fork(LOCK_PROCESS, [], {
      execArgv: hide.length > 0 ? ['--import', HIDE_PACKAGES] : [],
      stdio: 'inherit',
      env: {
        ...process.env,
        LOCK_PROCESS_OPTIONS: JSON.stringify(options),
        HIDE_PACKAGES: hide.join(','),
      },
    });
    const exited = once(child, 'exit').then(() => [{ error: 'it exited before it booted' }]);
    const [message] = (await Promise.race([once(child, 'message'), exited])) as [
      { booted?: boolean },
    ];
    if (!message.booted) {
      if (child.exitCode === null) await once(child, 'exit');
      throw new Error(`the lock process did not boot: ${JSON.stringify(message)}`);
    }
    return new LockProcess(child);
  }

  acquire(key: string, options: AcquireOptions = {}): Promise<HeldLock> {
    const id = this.nextId++;
    return this.ask(id, { id, acquire: key, options }).then(({ acquired }) =>
      this.held(id, acquired),
    );
  }

  /**
   * Calls `acquire(key, options)` in the process: `called` resolves once the call has been made
   * there and what the library sends at once is on its way; `lock` once the caller holds.
   */
  call(
    key: string,
    options: AcquireOptions = {},
  ): { called: Promise<void>; lock: Promise<HeldLock> } {
    const id = this.nextId++;
    const calledId = this.nextId++;
    const called = new Promise<void>((resolve, reject) =>
      this.pending.set(calledId, ({ error }) =>
        error === undefined ? resolve() : reject(new Error(error)),
      ),
    );
    const lock = this.ask(id, { id, acquire: key, options, called: calledId }).then(
      ({ acquired }) => this.held(id, acquired),
    );
    return { called, lock };
  }

  async waiting(key: string): Promise<number> {
    const id = this.nextId++;
    const { waiting } = await this.ask(id, { id, inspect: key });
    return waiting ?? 0;
  }

  /** Ends the process with `signal` at once (its app closes nothing), and waits for its exit. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = once(this.child, 'exit');
    this.child.kill(signal);
    await exited;
  }

  /** Adopts a lock that another process handed off (`LockService.adopt`). */
  adopt(handle: LockHandle): Promise<HeldLock> {
    const id = this.nextId++;
    return this.ask(id, { id, adopt: handle }).then(({ acquired }) => this.held(id, acquired));
  }

  /** Closes the process's app (which gives back what it holds) and waits for it to exit. */
  async close(): Promise<void> {
    if (this.child.exitCode !== null || !this.child.connected) return;
    const exited = once(this.child, 'exit');
    this.child.disconnect();
    await exited;
  }

  private held(id: number, fencingToken = -1): HeldLock {
    return {
      fencingToken,
      release: () => this.ask(id, { id, release: true }).then(({ released }) => released === true),
      again: () => {
        const next = this.nextId++;
        return this.ask(next, { id, again: next }).then(({ acquired }) =>
          this.held(next, acquired),
        );
      },
    };
  }

  /** Sends `message`, and resolves with the answer for caller `id` (rejects with its error). */
  private ask(id: number, message: object): Promise<Answer> {
    return new Promise<Answer>((resolve, reject) => {
      this.pending.set(id, (answer) =>
        answer.error === undefined ? resolve(answer) : reject(new Error(answer.error)),
      );
      this.child.send(message);
    });
  }
}
