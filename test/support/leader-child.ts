import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import type { LeaderInfo, LockModuleOptions } from '../../src/index.js';

const LEADER_PROCESS = fileURLToPath(new URL('./leader-process.mjs', import.meta.url));

/** What a leader process reports (see leader-process.mjs); times on the machine's monotonic clock. */
export type LeaderEvent =
  | { type: 'lead' | 'write'; epoch: number; at: number }
  | { type: 'abort'; epoch: number; at: number; reason: string };

/** One write that reached the fenced resource, and whether its guard took it. */
export interface FencedWrite {
  process: number;
  epoch: number;
  accepted: boolean;
}

/**
 * The resource the leaders write to, here in the test's process: it takes a write only if its
 * epoch is at least the highest it has taken, as a fenced table would.
 */
export class FencedResource {
  readonly writes: FencedWrite[] = [];
  private highest = 0;

  write(process: number, epoch: number): void {
    const accepted = epoch >= this.highest;
    if (accepted) this.highest = epoch;
    this.writes.push({ process, epoch, accepted });
  }
}

/** An app instance standing in the election `work`, in a process of its own. */
export class LeaderProcess {
  readonly events: LeaderEvent[] = [];
  readonly exited: Promise<unknown>;

  private constructor(
    readonly id: number,
    readonly child: ChildProcess,
    resource: FencedResource,
  ) {
    this.exited = once(child, 'exit');
    child.on('message', (event: LeaderEvent | { type: 'booted' | 'resigned' | 'who' }) => {
      if (!('epoch' in event)) return;
      this.events.push(event);
      if (event.type === 'write') resource.write(id, event.epoch);
    });
  }

  /** Starts a process with `LockModule.forRoot(options)` and a `@Leader('work', { ttl })`. */
  static async start(
    id: number,
    options: LockModuleOptions,
    ttl: number,
    resource: FencedResource,
  ): Promise<LeaderProcess> {
    const child = fork(LEADER_PROCESS, [], {
      execArgv: [],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env: {
        ...process.env,
        LEADER_PROCESS_OPTIONS: JSON.stringify(options),
        LEADER_TTL: String(ttl),
      },
    });
    const [message] = (await once(child, 'message')) as [{ type?: string }];
    if (message.type !== 'booted') throw new Error(`did not boot: ${JSON.stringify(message)}`);
    return new LeaderProcess(id, child, resource);
  }

  /** The terms it began, by epoch. */
  get terms(): number[] {
    return this.events.filter((e) => e.type === 'lead').map((e) => e.epoch);
  }

  /** Whether it leads as far as its messages say: a term began and its signal did not abort. */
  get leading(): boolean {
    const last = this.terms[this.terms.length - 1];
    return last !== undefined && !this.events.some((e) => e.type === 'abort' && e.epoch === last);
  }

  event(type: LeaderEvent['type'], epoch: number): LeaderEvent | undefined {
    return this.events.find((e) => e.type === type && e.epoch === epoch);
  }

  async resign(): Promise<void> {
    await this.ask('resign', 'resigned');
  }

  /** Who leads, as `LeaderService.leader` tells this process. */
  async who(): Promise<LeaderInfo | null> {
    const { leader } = (await this.ask('who', 'who')) as { leader: LeaderInfo | null };
    return leader;
  }

  /** Sends `request`, and resolves with the next message of type `answer`. */
  private ask(request: string, answer: string): Promise<unknown> {
    const answered = new Promise<unknown>((resolve) => {
      const listener = (message: { type?: string }) => {
        if (message.type !== answer) return;
        this.child.off('message', listener);
        resolve(message);
      };
      this.child.on('message', listener);
    });
    this.child.send(request);
    return answered;
  }

  /** Closes its app and waits for it to exit (kills it if it was stopped or stuck). */
  async close(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill('SIGCONT');
    if (this.child.connected) this.child.disconnect();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
    await this.exited;
    clearTimeout(timer);
  }
}
