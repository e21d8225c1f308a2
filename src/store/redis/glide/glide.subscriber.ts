import type { GlideClusterClient, PubSubMsg } from '@valkey/valkey-glide';
import type { RedisSubscriber, SubscriberOptions } from '../redis-client.port.js';
import { settled, type GlideConfiguration } from './glide.connections.js';
import type { AnyGlideClient } from './glide.package.js';

/**
 * How long a SUBSCRIBE may wait for the server's confirmation, beyond which GLIDE gives up on
 * the wait (not on the subscription, which it makes once it can). The store bounds the wait
 * with its own `commandTimeout`; this only ends a wait that nobody awaits any more.
 */
const SUBSCRIBE_TIMEOUT = 30_000;

/** RESP3, which GLIDE needs for pub/sub (its `ProtocolVersion.RESP3`). */
const RESP3 = 0;

/**
 * The store's subscriber connection on GLIDE: a client of its own (a subscribed connection
 * would take the user's pushes), created at once with the store's configuration and no
 * channel, whose messages go to `onMessage`. Channels are added and removed while it runs
 * (GLIDE 2.3 and later), and GLIDE subscribes to them again by itself after a reconnect. On a
 * Cluster, sharded channels go to the shard of their slot.
 *
 * @param create creates a client of the store's kind (and copy of GLIDE) from a configuration
 * @param config the store's client configuration, which this copies
 */
export function glideSubscriber(
  create: (config: GlideConfiguration) => Promise<AnyGlideClient>,
  config: GlideConfiguration,
  { sharded, onMessage, onError }: SubscriberOptions,
): RedisSubscriber {
  const callback = ({ channel, message }: PubSubMsg) => onMessage(String(channel), String(message));
  let closed = false;
  let created: Promise<AnyGlideClient> | undefined;
  const client = (): Promise<AnyGlideClient> => {
    if (created) return created;
    const creating = create({
      ...config,
      protocol: RESP3,
      pubsubSubscriptions: { channelsAndPatterns: {}, callback },
    });
    // A client that could not be created is created again for the next subscription.
    creating.catch((error: unknown) => {
      if (created === creating) created = undefined;
      if (!closed) onError(error);
    });
    created = creating;
    return creating;
  };
  void client().catch(() => undefined);
  const channels = (channel: string) => new Set([channel]);
  /** Requests sent and not yet answered: closing lets them settle first, as the client does. */
  const inFlight = new Set<Promise<unknown>>();
  const tracked = <T>(request: Promise<T>): Promise<T> => {
    inFlight.add(request);
    const forget = () => void inFlight.delete(request);
    request.then(forget, forget);
    return request;
  };
  return {
    subscribe: (channel) =>
      tracked(
        client().then((subscriber) =>
          sharded
            ? (subscriber as GlideClusterClient).ssubscribe(channels(channel), SUBSCRIBE_TIMEOUT)
            : subscriber.subscribe(channels(channel), SUBSCRIBE_TIMEOUT),
        ),
      ),
    unsubscribe: (channel) =>
      tracked(
        client().then((subscriber) =>
          sharded
            ? (subscriber as GlideClusterClient).sunsubscribeLazy(channels(channel))
            : subscriber.unsubscribeLazy(channels(channel)),
        ),
      ),
    close: async () => {
      closed = true;
      await settled(inFlight);
      const subscriber = await created?.catch(() => undefined);
      subscriber?.close();
    },
  };
}
