import { kindOfToken } from '../../src/store/lock-kind.js';
import { standing } from '../../src/store/zookeeper/zookeeper-kinds.js';
import { inLine, tokenOfNode } from '../../src/store/zookeeper/zookeeper-paths.js';
import type { Names } from './sim-store.js';
import type { Place, World } from './world.js';
import type { ZkServer } from './zk-server.js';

/**
 * Liveness on ZooKeeper, where a turn is announced once: a contender whose node comes to
 * stand where it holds must be asked for by its caller soon after (its next attempt finds that
 * it holds), or be let go. So once a node holds, an attempt of its token must start or end, or
 * its release come, within `bound` ms; a killed instance's nodes are left to their session.
 */
export class ZkLiveness {
  /** Each contender's node that holds, and since when. */
  private readonly holding = new Map<string, number>();
  /** Per token: its instance, when an attempt of it last started or ended, and whether one runs. */
  private readonly tokens = new Map<string, { place: Place; at: number; running: number }>();
  private readonly released = new Set<string>();
  /**
   * @param bound how long a node may hold unasked for
   */
  constructor(
    private readonly world: World,
    private readonly names: Names,
    private readonly fail: (detail: string) => void,
    private readonly bound: () => number,
  ) {}

  /** The line under the lock node `parent` changed: which of its nodes hold now. */
  changed(server: ZkServer, parent: string): void {
    const line = inLine(server.childrenOf(parent));
    for (const [path] of this.holding) {
      if (path.startsWith(`${parent}/`) && !server.nodes.has(path)) this.holding.delete(path);
    }
    line.forEach((name, place) => {
      const where = standing(line, place, kindOfToken(tokenOfNode(name)));
      const path = `${parent}/${name}`;
      if ('holds' in where && where.holds && !this.holding.has(path)) {
        this.holding.set(path, this.world.now());
      }
    });
  }

  /** An attempt of `token` starts (`+1`) or ends (`-1`) in `place`'s store. */
  attempt(place: Place, token: string, step: 1 | -1): void {
    const known = this.tokens.get(token) ?? { place, at: 0, running: 0 };
    this.tokens.set(token, { place, at: this.world.now(), running: known.running + step });
  }

  release(token: string): void {
    this.released.add(token);
  }

  /** Fails the run if a node has held for longer than the bound with nobody asking for it. */
  check(): void {
    const now = this.world.now();
    for (const [path, since] of this.holding) {
      if (now - since <= this.bound()) continue;
      const token = tokenOfNode(path.slice(path.lastIndexOf('/') + 1));
      const known = this.tokens.get(token);
      if (!known || known.place.crashed || known.running > 0 || known.at >= since) continue;
      if (this.released.has(token)) continue;
      const node = `${path.slice(0, path.lastIndexOf('/'))}/${this.names.of(token)}`;
      this.fail(`${node} has held since ${since}, and its caller has not asked for it since`);
      return;
    }
  }
}
