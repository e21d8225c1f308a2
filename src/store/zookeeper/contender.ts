/**
 * A contender of this process: a caller whose node stands in a lock's line, from its first
 * attempt until it leaves. Its node's watch wakes it, and only it: its caller's next attempt
 * looks at the line again (see `LineStandings.lookUp`).
 */
export class Contender {
  /** The name of the contender's node under {@link parent}, once created. */
  name?: string;
  fencingToken?: number;
  /** The server time its node was created, in ms since the epoch, once read with its token. */
  createdAt?: number;
  /** A semaphore's waiter: which watch of the line is its own (see `ContenderWatches.watchLine`), if any. */
  lineWatch?: number;
  /**
   * The node ahead whose watch wakes it, while that watch is set: a later attempt that finds the
   * same node ahead adds no listener of its own to it (a waiter's every re-check would).
   */
  watching?: string;
  /** The caller left (released or gave up): its node goes as soon as the attempt ends. */
  departed = false;
  /** How many times it was woken: an attempt that sees this change while it looks looks again. */
  wakes = 0;

  /**
   * @param parent the lock's node
   * @param session the session that created the node: the node goes when it ends
   * @param woken told when the contender is woken (see {@link wake})
   */
  constructor(
    readonly key: string,
    readonly token: string,
    readonly parent: string,
    public session: number,
    private readonly woken: (contender: Contender) => void,
  ) {}

  /** The path of the contender's node (once it has a {@link name}). */
  get path(): string {
    return `${this.parent}/${this.name}`;
  }

  /** What it waits for happened (the node it watches went, or its line changed): it may hold. */
  wake(): void {
    this.wakes++;
    this.woken(this);
  }
}

/**
 * The contenders of this process, by token: one per caller that has a node, or is creating one.
 * A contender woken while it is still the token's own and its caller still waits is announced
 * its turn, for its caller to make its next attempt.
 */
export class Contenders {
  private readonly byToken = new Map<string, Contender>();
  /** The same contenders, by the lock node they stand under. */
  private readonly byParent = new Map<string, Set<Contender>>();

  /** @param turn announces the contender's turn to its caller */
  constructor(private readonly turn: (contender: Contender) => void) {}

  get(token: string): Contender | undefined {
    return this.byToken.get(token);
  }

  /** A new contender for `token`, in `session`, whose node will stand under `parent`. */
  enter(key: string, token: string, parent: string, session: number): Contender {
    const before = this.byToken.get(token);
    if (before) this.forget(before);
    const contender = new Contender(key, token, parent, session, (woken) => {
      if (this.isCurrent(woken) && !woken.departed) this.turn(woken);
    });
    this.byToken.set(token, contender);
    let line = this.byParent.get(parent);
    if (!line) this.byParent.set(parent, (line = new Set()));
    line.add(contender);
    return contender;
  }

  /**
   * Whether another contender of this process stands under the lock node of `contender`, or is
   * on its way there, in the same session and not leaving: then the lock node is there when the
   * creation of `contender`'s node, sent after that one's, is applied. Otherwise it may be
   * missing: another process's last release deletes it.
   */
  accompanied(contender: Contender): boolean {
    for (const other of this.byParent.get(contender.parent) ?? []) {
      if (other !== contender && !other.departed && other.session === contender.session) {
        return true;
      }
    }
    return false;
  }

  /** Whether `contender` is still its token's own (not left, nor lined up anew). */
  isCurrent(contender: Contender): boolean {
    return this.byToken.get(contender.token) === contender;
  }

  /** The contender is done with (its node is gone, or being deleted). */
  forget(contender: Contender): void {
    if (!this.isCurrent(contender)) return;
    this.byToken.delete(contender.token);
    const line = this.byParent.get(contender.parent);
    line?.delete(contender);
    if (line?.size === 0) this.byParent.delete(contender.parent);
  }

  /**
   * The session expired: its nodes are gone, so its contenders hold nothing. Holders learn it
   * at their next renewal; waiters are woken, and line up again on their next attempt.
   */
  sessionExpired(): void {
    // The contenders of the expired session only: a woken waiter may line up again at once,
    // and its new contender, in the next session, must not be counted among them.
    for (const contender of [...this.byToken.values()]) {
      contender.session = -1;
      // Its watch went with the session.
      contender.watching = undefined;
      contender.wake();
      if (contender.departed) this.forget(contender);
    }
  }

  clear(): void {
    this.byToken.clear();
    this.byParent.clear();
  }
}
