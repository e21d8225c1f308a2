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

  /** @param turn announces the contender's turn to its caller */
  constructor(private readonly turn: (contender: Contender) => void) {}

  get(token: string): Contender | undefined {
    return this.byToken.get(token);
  }

  /** A new contender for `token`, in `session`, whose node will stand under `parent`. */
  enter(key: string, token: string, parent: string, session: number): Contender {
    const contender = new Contender(key, token, parent, session, (woken) => {
      if (this.isCurrent(woken) && !woken.departed) this.turn(woken);
    });
    this.byToken.set(token, contender);
    return contender;
  }

  /** Whether `contender` is still its token's own (not left, nor lined up anew). */
  isCurrent(contender: Contender): boolean {
    return this.byToken.get(contender.token) === contender;
  }

  /** The contender is done with (its node is gone, or being deleted). */
  forget(contender: Contender): void {
    if (this.isCurrent(contender)) this.byToken.delete(contender.token);
  }

  /**
   * The session expired: its nodes are gone, so its contenders hold nothing. Holders learn it
   * at their next renewal; waiters are woken, and line up again on their next attempt.
   */
  sessionExpired(): void {
    for (const [token, contender] of this.byToken) {
      contender.session = -1;
      contender.wake();
      if (contender.departed) this.byToken.delete(token);
    }
  }

  clear(): void {
    this.byToken.clear();
  }
}
