/**
 * The worker's side of the arrival-order check: when each call of a worker began, and when its
 * first attempt went to Redis and was answered, on a clock every process of the machine shares.
 *
 * The clock is `process.hrtime`: CLOCK_MONOTONIC on Linux, one clock for the whole machine, so
 * that a time taken in one worker compares with a time taken in another (`performance.now()`
 * would not: it counts from each process's own start). The checker still checks, at each
 * worker's start, that the worker's clock is not ahead of its own (see `ready`).
 *
 * The library's first attempt of a call is sent synchronously within the call (`using` runs
 * down to the Redis command before its first await), so the acquire command that the watched
 * connection sees while {@link FirstAttempts.call} runs is that call's first attempt. A call
 * during which none went out had its first attempt answered by the library itself, without a
 * place in the store's line: that is recorded as it is (`first` undefined), not guessed at.
 *
 * Except on GLIDE: its adapter sends a command once the earlier ones on its key's hash slot are
 * answered (GLIDE does not keep the order of requests sent together), so a call's first attempt
 * may go out after the call returned, behind the release its worker just sent. There the first
 * acquire command that carried the call's token, sent after the call began, is its first
 * attempt ({@link FirstAttempts.adopt}); this can only date an arrival later, never earlier.
 */

/** Milliseconds on the machine's monotonic clock, shared by every process. */
export const sharedNow = () => Number(process.hrtime.bigint()) / 1e6;

/**
 * One call, as the arrival-order check needs it; times on {@link sharedNow}'s clock.
 * @typedef {object} CallTiming
 * @property {number} caller which caller of its worker made it
 * @property {number} calledAt just before the call (before its first attempt can have gone out)
 * @property {number} returnedAt when the call had returned its promise to the caller
 * @property {FirstAttempt} [first] its first attempt, when it went to Redis during the call
 */
/**
 * @typedef {object} FirstAttempt
 * @property {string} token the caller's token, which the attempt carried
 * @property {number} sentAt when the command was handed to the connection
 * @property {number} [answeredAt] when its answer came back (after Redis ran it)
 * @property {boolean} [acquired] whether it took the lock (otherwise it took a place in line)
 */

/**
 * Whether an ioredis command runs the acquire script: EVAL or EVALSHA with the script's five
 * arguments after the keys (see `AcquireArgs`), the fourth the publishing command (the release
 * script has its publishing command third).
 * @param {{ name: string, args: unknown[] }} command
 */
function acquireToken(command) {
  if (command.name !== 'evalsha' && command.name !== 'eval') return undefined;
  const argv = command.args.slice(2 + Number(command.args[1]));
  const publish = String(argv[3]);
  if (argv.length !== 5 || (publish !== 'PUBLISH' && publish !== 'SPUBLISH')) return undefined;
  return String(argv[0]);
}

/** How many deferred first attempts a worker remembers, waiting for their call's grant. */
const DEFERRED_KEPT = 256;

export class FirstAttempts {
  /** @type {CallTiming | undefined} the call being made, while it runs synchronously */
  #starting = undefined;
  /** @type {Map<string, FirstAttempt> | undefined} each token's first acquire command, if deferred */
  #byToken;

  /** @param {boolean} [deferred] whether first attempts may go out after their call returned */
  constructor(deferred = false) {
    this.#byToken = deferred ? new Map() : undefined;
  }

  /**
   * Watches a command as it is sent on the lock's connection.
   * @param {{ name: string, args: unknown[], promise: Promise<unknown> }} command
   */
  sent(command) {
    const call = this.#starting;
    if ((!call || call.first) && !this.#byToken) return;
    const token = acquireToken(command);
    if (token === undefined) return;
    /** @type {FirstAttempt} */
    const first = { token, sentAt: sharedNow() };
    if (call && !call.first) call.first = first;
    else if (this.#byToken && !this.#byToken.has(token)) {
      this.#byToken.set(token, first);
      const [oldest] = this.#byToken.keys();
      if (this.#byToken.size > DEFERRED_KEPT) this.#byToken.delete(oldest);
    } else return;
    command.promise.then(
      (reply) => {
        first.answeredAt = sharedNow();
        first.acquired = Array.isArray(reply) && Number(reply[0]) === 1;
      },
      () => undefined,
    );
  }

  /**
   * Gives a granted call whose first attempt did not go out while it was made the first
   * attempt that carried its token afterwards, where attempts may be deferred.
   * @param {CallTiming} timing
   * @param {string} token the call's lock token
   */
  adopt(timing, token) {
    const deferred = this.#byToken?.get(token);
    if (timing.first || !deferred || deferred.sentAt < timing.calledAt) return;
    timing.first = deferred;
    this.#byToken?.delete(token);
  }

  /**
   * Makes a call (`start` returns its promise at once) and dates it.
   * @template T
   * @param {number} caller
   * @param {() => Promise<T>} start
   * @returns {{ timing: CallTiming, result: Promise<T> }}
   */
  call(caller, start) {
    /** @type {CallTiming} */
    const timing = { caller, calledAt: sharedNow(), returnedAt: 0 };
    this.#starting = timing;
    try {
      return { timing, result: start() };
    } finally {
      this.#starting = undefined;
      timing.returnedAt = sharedNow();
    }
  }
}
