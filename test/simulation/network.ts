import type { Random } from './random.js';
import type { Place, World } from './world.js';

/** How the seed's network behaves. */
export interface NetworkShape {
  /** Latency of one message, in ms: from `minLatency` to `maxLatency`... */
  minLatency: number;
  maxLatency: number;
  /** ...and with this probability, a spike of up to `spike` ms more. */
  spikeChance: number;
  spike: number;
  /** Probability that a notice (release, turn) is lost on its way. */
  noticeLoss: number;
  /**
   * Up to how many ms more a notice may take than a reply, one notice in four: the pub/sub
   * connection lags behind the one that carries the replies.
   */
  noticeLag: number;
}

/**
 * One direction of one connection: messages on it arrive in the order they were sent, each no
 * sooner than its latency allows and none while the lane is blocked.
 */
class Lane {
  /** When the last message sent may arrive, at the soonest. */
  last = 0;
  readonly queue: { at: number; deliver: () => void }[] = [];
  /** A timer is set for the head of the queue. */
  armed = false;

  /** @param blockedUntil until when nothing arrives (a stall, a pause) */
  constructor(readonly blockedUntil: () => number) {}
}

/** The lanes of one instance's connections to the store. */
export interface Link {
  readonly place: Place;
  readonly requests: Lane;
  readonly replies: Lane;
  readonly notices: Lane;
}

/**
 * The seeded network between the instances and the store: every request, reply and notice
 * takes a latency of its own, keeps its connection's order, waits out a stalled connection, a
 * stopped instance or a paused store, and a killed instance sends and receives nothing.
 */
export class Network {
  /** Virtual ms until which the store applies nothing. */
  storePausedUntil = 0;

  constructor(
    readonly world: World,
    private readonly random: Random,
    private readonly shape: NetworkShape,
  ) {}

  link(place: Place): Link {
    const toStore = () => Math.max(this.storePausedUntil, place.stalledUntil);
    const toInstance = () => Math.max(place.stalledUntil, place.pausedUntil);
    return {
      place,
      requests: new Lane(toStore),
      replies: new Lane(toInstance),
      notices: new Lane(() => Math.max(toInstance(), place.noticesStalledUntil)),
    };
  }

  /**
   * Sends a request to the store, which applies it (`apply` changes the store's state at once,
   * atomically) when it arrives; the reply comes back on the reply lane.
   */
  roundTrip<T>(link: Link, what: string, apply: () => Promise<T>, told: (reply: T) => string) {
    const { place } = link;
    return new Promise<T>((resolve, reject) => {
      if (place.crashed) return;
      this.send(link.requests, 0, () => {
        this.world.log(`store  ${place.name} ${what}`);
        apply().then(
          (reply) => this.answer(link, `${what} → ${told(reply)}`, () => resolve(reply)),
          (error: unknown) => this.answer(link, `${what} → error`, () => reject(error)),
        );
      });
    });
  }

  /**
   * The instance was killed: the store sees its connection drop once the requests already on
   * their way have arrived, as a TCP connection's close comes behind its data.
   */
  disconnect(link: Link, drop: () => void): void {
    this.send(link.requests, 0, () => {
      this.world.log(`store  ${link.place.name} connection dropped`);
      drop();
    });
  }

  /** A notice from the store to `link`'s instance, unless the seed loses it. */
  notify(link: Link, what: string, deliver: () => void): void {
    if (link.place.crashed) return;
    if (this.random.chance(this.shape.noticeLoss)) {
      this.world.log(`lost   ${link.place.name} ${what}`);
      return;
    }
    const lag = this.random.chance(0.25) ? this.random.int(0, this.shape.noticeLag) : 0;
    this.send(link.notices, lag, () => {
      if (link.place.crashed) return;
      this.world.log(`notice ${link.place.name} ${what}`);
      this.world.within(link.place, deliver);
    });
  }

  /**
   * A message that the store sends on its own on the connection that carries the replies (a
   * ZooKeeper watch event, or the end of a session): it keeps its place among the replies, so
   * that the instance hears of a change before any reply that reflects a later one.
   */
  push(link: Link, what: string, deliver: () => void): void {
    if (!link.place.crashed) this.answer(link, what, deliver, 'watch ');
  }

  private answer(link: Link, what: string, deliver: () => void, label = 'reply '): void {
    this.send(link.replies, 0, () => {
      if (link.place.crashed) return;
      this.world.log(`${label} ${link.place.name} ${what}`);
      this.world.within(link.place, deliver);
    });
  }

  private latency(): number {
    const { minLatency, maxLatency, spikeChance, spike } = this.shape;
    const base = this.random.int(minLatency, maxLatency);
    return this.random.chance(spikeChance) ? base + this.random.int(1, spike) : base;
  }

  /**
   * Delivers after a latency (and `lag` ms more), behind the lane's earlier messages, once the
   * lane is open.
   */
  private send(lane: Lane, lag: number, deliver: () => void): void {
    const at = Math.max(this.world.now() + this.latency() + lag, lane.last);
    lane.last = at;
    lane.queue.push({ at, deliver });
    this.pump(lane);
  }

  /** Sets a timer for the lane's first message, which delivers it and then sets the next. */
  private pump(lane: Lane): void {
    const [head] = lane.queue;
    if (lane.armed || head === undefined) return;
    lane.armed = true;
    const when = Math.max(head.at, lane.blockedUntil());
    this.world.after(when - this.world.now(), () => {
      lane.armed = false;
      if (Math.max(head.at, lane.blockedUntil()) <= this.world.now()) {
        lane.queue.shift();
        head.deliver();
      }
      this.pump(lane);
    });
  }
}
