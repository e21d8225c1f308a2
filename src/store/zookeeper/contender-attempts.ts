import type { AcquireAttempt } from '../lock-store.interface.js';
import type { Contender, Contenders } from './contender.js';
import type { LineStandings } from './line-standings.js';
import type { LockNodes } from './lock-nodes.js';
import { retried, type ZooKeeperNodes } from './zookeeper-nodes.js';
import { contenderPrefix, inLine, lockPath } from './zookeeper-paths.js';
import type { ZooKeeperSession } from './zookeeper-session.js';

/**
 * The attempts of callers: each makes sure that its caller has a node in the lock's line (the
 * first attempt creates it; a later one finds it, or lines up again if its session expired),
 * then looks where the caller stands (see {@link LineStandings}).
 */
export class ContenderAttempts {
  /** The attempts on their way, by token: a release waits for its caller's before it leaves. */
  private readonly running = new Map<string, Promise<AcquireAttempt>>();

  constructor(
    private readonly session: ZooKeeperSession,
    private readonly nodes: ZooKeeperNodes,
    private readonly lockNodes: LockNodes,
    private readonly contenders: Contenders,
    private readonly standings: LineStandings,
    private readonly root: string,
  ) {}

  /**
   * One attempt of a token at a time: one that timed out may still be running (its calls wait
   * for a connection) when its caller tries again, and two beside each other could each create
   * a node, one of which nobody would delete. The next starts when the last has settled, so
   * that every call it makes is sent after its caller's request.
   */
  attempt(key: string, token: string, queue: boolean): Promise<AcquireAttempt> {
    const run = () => retried(() => this.attemptOnce(key, token, queue));
    const before = this.running.get(token);
    const running = before ? before.then(run, run) : run();
    this.running.set(token, running);
    const settled = () => {
      if (this.running.get(token) === running) this.running.delete(token);
    };
    running.then(settled, settled);
    return running;
  }

  /** The attempt of `token` on its way, if any. */
  runningFor(token: string): Promise<AcquireAttempt> | undefined {
    return this.running.get(token);
  }

  /** One try of an attempt, which first learns what an interrupted one did. */
  private async attemptOnce(key: string, token: string, queue: boolean): Promise<AcquireAttempt> {
    const parent = lockPath(this.root, key);
    let contender = this.contenders.get(token);
    if (contender && contender.session !== this.session.current) {
      // Its node went with an expired session: the caller lines up again, at the back.
      this.contenders.forget(contender);
      contender = undefined;
    }
    if (!contender) {
      const children = queue ? [] : await this.nodes.children(parent);
      if (!queue && !this.standings.wouldHold(key, token, children)) {
        return this.standings.refusal(parent, inLine(children));
      }
      contender = this.contenders.enter(key, token, parent, this.session.current);
      await this.createNode(contender);
    } else if (contender.name === undefined) {
      // The answer to its node's creation was lost with the connection, in this session: the
      // node is there if the server applied the creation, and its name starts with the token.
      const mine = (await this.nodes.children(parent)).find((name) =>
        name.startsWith(contenderPrefix(token)),
      );
      if (mine) contender.name = mine;
      else await this.createNode(contender);
    }
    return this.standings.lookUp(contender, queue);
  }

  /**
   * Creates the contender's node; the session it is sent on owns it. The lock node's creation
   * goes right ahead of it unless another contender of this process stands under it: were it
   * missing, the creation would fail, and be sent again only after a round trip, behind the
   * callers of other processes that came meanwhile.
   */
  private async createNode(contender: Contender): Promise<void> {
    contender.name = await this.lockNodes.createContender(
      contender.parent,
      contender.token,
      !this.contenders.accompanied(contender),
      () => (contender.session = this.session.current),
    );
  }
}
