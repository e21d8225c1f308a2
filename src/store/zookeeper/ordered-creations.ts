import { codeOf, ZK_NO_NODE } from './zookeeper-session.js';

/** The requests that {@link OrderedCreations} makes, each sent on the session as it is called. */
export interface CreationRequests {
  /** Creates the ephemeral sequential node of `token` under `parent`: its path. */
  createNode(parent: string, token: string): Promise<string>;
  /** Creates the lock node `parent`; resolves whether it existed or not. */
  createParent(parent: string): Promise<unknown>;
  /** Deletes a node; resolves whether it existed or not. */
  removeNode(path: string): Promise<unknown>;
}

/** One caller's node to create: sent, or waiting to be sent, or to be sent again. */
interface Creation {
  readonly token: string;
  /** Called once its request is sent (the session it went on owns the node). */
  readonly sending: () => void;
  readonly resolve: (path: string) => void;
  readonly reject: (error: unknown) => void;
  /** `again`: its request found no lock node, or its node came ahead of one that did. */
  state: 'waiting' | 'sent' | 'again';
  /** While its request is sent and unanswered: the timer that stops waiting for the answer. */
  lost?: NodeJS.Timeout;
}

/**
 * How long a line waits for the answer to a creation it sent, in ms: longer than any call is
 * given (`commandTimeout`), so that only an answer that will never come (a request lost with
 * its connection in a way the client does not report) stops being waited for.
 */
const PATIENCE = 10_000;

/** The creations under one lock node that have not been answered yet, in arrival order. */
interface Line {
  readonly creations: Creation[];
  /** A creation found no lock node: nothing is sent until the line is put right. */
  halted: boolean;
  /** The lock node's creation is on its way, and the line's creations go right after it. */
  resuming: boolean;
}

/**
 * Sends the creations of contenders' nodes under each lock node in the order the callers came,
 * so that their sequence numbers keep that order. A session's requests are applied in the order
 * they are sent, so creations that follow each other need no waiting, and a creation whose lock
 * node may be missing has the lock node's creation sent right ahead of it. Should a creation
 * find the lock node missing all the same (another process's last release deleted it between
 * the two), the creations sent meanwhile fail too, and a caller that came later must not get
 * its node in first. So the line halts until every creation sent has been answered, the lock
 * node is created, and the creations are sent again in arrival order; a node that got in ahead
 * of an earlier caller's failed creation (another session created the lock node between the
 * two) is deleted and created again behind it.
 */
export class OrderedCreations {
  private readonly lines = new Map<string, Line>();

  /** @param patience see {@link PATIENCE} */
  constructor(
    private readonly requests: CreationRequests,
    private readonly patience = PATIENCE,
  ) {}

  /**
   * The path of the node created for `token` under `parent`, in its turn.
   * @param parentMissing the lock node may be missing: its creation goes first
   * @param sending called once the creation is sent (again, when it must be)
   */
  create(
    parent: string,
    token: string,
    parentMissing: boolean,
    sending: () => void,
  ): Promise<string> {
    let line = this.lines.get(parent);
    if (!line) this.lines.set(parent, (line = { creations: [], halted: false, resuming: false }));
    const queued = line;
    return new Promise<string>((resolve, reject) => {
      const creation: Creation = { token, sending, resolve, reject, state: 'waiting' };
      queued.creations.push(creation);
      if (queued.halted) return;
      // Sent right ahead of the creation: applied first, in the same round trip.
      if (parentMissing) this.requests.createParent(parent).catch(() => undefined);
      this.send(parent, queued, creation);
    });
  }

  private send(parent: string, line: Line, creation: Creation): void {
    creation.state = 'sent';
    const request = this.requests.createNode(parent, creation.token);
    creation.sending();
    // An answer that never comes must not hold the line (and every later caller of the key)
    // for good: the caller learns it failed, and its next attempt looks for its node by its
    // token, should the creation have been applied after all.
    const lost = setTimeout(() => {
      creation.lost = undefined;
      const error = new Error(`no answer to the creation of a node under ${parent}`);
      this.settle(parent, line, creation, () => creation.reject(error));
    }, this.patience);
    lost.unref();
    creation.lost = lost;
    const answered = () => {
      clearTimeout(lost);
      creation.lost = undefined;
      return line.creations.includes(creation);
    };
    request.then(
      (path) => {
        if (answered()) this.created(parent, line, creation, path);
      },
      (error: unknown) => {
        if (!answered()) return;
        if (codeOf(error) === ZK_NO_NODE) this.again(parent, line, creation);
        else this.settle(parent, line, creation, () => creation.reject(error));
      },
    );
  }

  private created(parent: string, line: Line, creation: Creation, path: string): void {
    const before = line.creations.slice(0, line.creations.indexOf(creation));
    if (!before.some((earlier) => earlier.state === 'again')) {
      this.settle(parent, line, creation, () => creation.resolve(path));
      return;
    }
    // Ahead of a caller that came first: sent before the creations that follow, the deletion
    // is applied before them. Should it fail, the caller keeps that node (its next attempt
    // finds it by its token) rather than leave a node nobody knows of.
    this.requests.removeNode(path).then(
      () => this.again(parent, line, creation),
      (error: unknown) => this.settle(parent, line, creation, () => creation.reject(error)),
    );
  }

  /** The creation must be sent again, behind those before it: the line halts until then. */
  private again(parent: string, line: Line, creation: Creation): void {
    creation.state = 'again';
    line.halted = true;
    this.resume(parent, line);
  }

  /**
   * The store closes: every creation not answered yet fails with `error` (its node, if the
   * server made it, goes with the session), and no timer is left behind. Returns the lock nodes
   * of the lines it ended: one of them may have been created for creations that will now never
   * be sent, and nobody else would delete it.
   */
  close(error: Error): string[] {
    const lines = [...this.lines.entries()];
    this.lines.clear();
    for (const [, line] of lines) {
      for (const creation of line.creations.splice(0)) {
        clearTimeout(creation.lost);
        creation.reject(error);
      }
    }
    return lines.map(([parent]) => parent);
  }

  /** Takes an answered creation out of the line, then tells its caller. */
  private settle(parent: string, line: Line, creation: Creation, tell: () => void): void {
    const at = line.creations.indexOf(creation);
    if (at === -1) return;
    line.creations.splice(at, 1);
    tell();
    this.resume(parent, line);
  }

  /**
   * Once a halted line has every creation answered: creates the lock node, then sends the
   * line's creations in arrival order (those that came meanwhile too).
   */
  private resume(parent: string, line: Line): void {
    if (line.creations.length === 0 && !line.halted) {
      if (this.lines.get(parent) === line) this.lines.delete(parent);
      return;
    }
    if (!line.halted || line.resuming) return;
    if (line.creations.some((creation) => creation.state === 'sent')) return;
    line.resuming = true;
    const reopen = () => {
      line.halted = false;
      line.resuming = false;
      return [...line.creations];
    };
    this.requests.createParent(parent).then(
      () => {
        for (const creation of reopen()) this.send(parent, line, creation);
      },
      (error: unknown) => {
        for (const creation of reopen()) {
          this.settle(parent, line, creation, () => creation.reject(error));
        }
      },
    );
  }
}
