import type { HeldLock } from '../../src/engine/held-lock.js';
import { Wait, type WaitingCaller } from '../../src/engine/wait.js';
import type { Waiters } from '../../src/engine/waiters.js';
import { LockConnectionError, LockNotAcquiredError } from '../../src/lock.errors.js';
import type { AcquireAttempt, LockEvent, LockStore } from '../../src/store/lock-store.interface.js';

/**
 * The waiting loop, scripted (test/unit/wait*.spec.ts): a caller whose attempts the test answers
 * one by one, in a real `Waiters` over a store that only subscribes (the test says when
 * notifications flow, and what they bring).
 */

/** A caller whose attempts answer as the test says, recording what happens to it. */
export class ScriptedCaller implements WaitingCaller {
  readonly events: string[] = [];
  readonly name = 'k';
  readonly key = 'lock:k';
  readonly insideLock = false;
  attempts = 0;
  /** Grants whose answers came after the caller's validity ran out (the store paused). */
  tooLate = false;
  shuttingDown = false;
  validFrom?: number;
  private replies: { resolve: (attempt: AcquireAttempt) => void; reject: (e: Error) => void }[] =
    [];

  constructor(
    readonly token: string,
    readonly queueing = true,
    readonly deadline = Infinity,
    readonly signal?: AbortSignal,
  ) {}

  /** Every attempt fails at once with this error (a store that cannot be reached). */
  failsWith?: Error;

  attempt(): Promise<AcquireAttempt> {
    this.attempts++;
    if (this.failsWith) return Promise.reject(this.failsWith);
    return new Promise((resolve, reject) => this.replies.push({ resolve, reject }));
  }

  /** Answers the attempt on its way. */
  async answer(attempt: AcquireAttempt): Promise<void> {
    this.reply().resolve(attempt);
    await settle();
  }

  /** Fails the attempt on its way. */
  async fail(error: Error): Promise<void> {
    this.reply().reject(error);
    await settle();
  }

  private reply() {
    const reply = this.replies.shift();
    if (!reply) throw new Error(`${this.token} has no attempt on its way`);
    return reply;
  }

  hold(fencingToken: number, validFrom: number): HeldLock {
    this.events.push(`holds ${fencingToken}`);
    this.validFrom = validFrom;
    return { fencingToken } as HeldLock;
  }
  late(): LockConnectionError | undefined {
    return this.tooLate ? new LockConnectionError('k', 'the answer came too late') : undefined;
  }
  refused(): boolean {
    return this.shuttingDown;
  }
  leave(): void {
    this.events.push('leaves');
  }
  waiting(): void {
    this.events.push('waits');
  }
  notAcquired(pttl: number): Error {
    return new LockNotAcquiredError(this.name, 0, pttl);
  }
}

/** A store whose subscriptions resolve when the test says, and whose events the test sends. */
export class Notices {
  listeners = new Map<string, (event: LockEvent) => void>();
  private pending: (() => void)[] = [];
  readonly store = {
    capabilities: { queueing: true },
    subscribe: (key: string, onEvent: (event: LockEvent) => void) =>
      new Promise<() => void>((resolve) => {
        this.pending.push(() => {
          this.listeners.set(key, onEvent);
          resolve(() => this.listeners.delete(key));
        });
      }),
  } as unknown as LockStore;

  /** Notifications start to flow. */
  async flow(): Promise<void> {
    for (const start of this.pending.splice(0)) start();
    await settle();
  }

  async tell(event: LockEvent): Promise<void> {
    this.listeners.get('lock:k')?.(event);
    await settle();
  }
}

export const refused = (pttl = 10_000): AcquireAttempt => ({ acquired: false, pttl });
export const granted = (fencingToken: number): AcquireAttempt => ({ acquired: true, fencingToken });
export const settle = async () => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

/** Starts the wait of `caller` in `waiters`, recording how it ends in the caller's events. */
export function startWait(
  waiters: Waiters,
  caller: ScriptedCaller,
  answered?: AcquireAttempt,
): Promise<HeldLock> {
  const outcome = new Wait(caller, waiters).run(
    answered ? { answer: answered, sentAt: 0 } : undefined,
  );
  outcome.then(
    (lock) => caller.events.push(`got ${lock.fencingToken}`),
    (error: Error) => caller.events.push(`failed ${error.name}: ${error.message}`),
  );
  return outcome;
}
