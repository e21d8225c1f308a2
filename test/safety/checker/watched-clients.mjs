/**
 * The worker's command connection to the single Redis, of the client library the checker runs
 * (`--client`), passed to the module as a user's client would be: every command the library
 * sends on it is watched as it goes out (for the first attempts of the arrival-order check)
 * and when its answer comes (for the grants whose answer took about their TTL).
 */
import { GlideClient } from '@valkey/valkey-glide';
import { Redis as IoRedis } from 'ioredis';
import { Redis as IoValkey } from 'iovalkey';
import { createClient } from 'redis';

/** The client libraries the checker can run the workers on. */
export const CHECKER_CLIENTS = /** @type {const} */ ([
  'ioredis',
  'iovalkey',
  'node-redis',
  'glide',
]);

/** @typedef {(typeof CHECKER_CLIENTS)[number]} CheckerClient */

/**
 * What a watcher is told of each command: its name (lower case), its arguments after the name,
 * and the promise of its answer.
 * @typedef {(command: { name: string, args: unknown[], promise: Promise<unknown> }) => void} CommandWatcher
 */

/**
 * The watched connection of the client `name` to `url`, and how to close it once the module is.
 * @param {CheckerClient} name
 * @param {string} url
 * @param {CommandWatcher} watch
 * @returns {Promise<{ client: unknown, moduleOptions: Record<string, unknown>, close(): Promise<void> }>}
 */
export async function watchedClient(name, url, watch) {
  switch (name) {
    case 'ioredis':
    case 'iovalkey':
      // iovalkey is a fork of ioredis with the same API.
      return watchedIoRedis(
        name === 'ioredis'
          ? IoRedis
          : /** @type {typeof IoRedis} */ (/** @type {unknown} */ (IoValkey)),
        url,
        watch,
      );
    case 'glide':
      return watchedGlide(url, watch);
    case 'node-redis':
      return watchedNodeRedis(url, watch);
  }
}

/**
 * A node-redis client (connected, as the module wants a client passed in), each `sendCommand`
 * (which the library sends everything through) watched.
 * @param {string} url
 * @param {CommandWatcher} watch
 */
async function watchedNodeRedis(url, watch) {
  const client = createClient({ url });
  client.on('error', () => undefined);
  await client.connect();
  const sending =
    /** @type {{ sendCommand: (args: string[], options?: unknown) => Promise<unknown> }} */ (
      /** @type {unknown} */ (client)
    );
  const sendCommand = sending.sendCommand.bind(client);
  sending.sendCommand = (args, options) => {
    const promise = sendCommand(args, options);
    watch({ name: String(args[0]).toLowerCase(), args: args.slice(1), promise });
    return promise;
  };
  return {
    client,
    moduleOptions: { redis: client },
    close: async () => {
      await client.quit().catch(() => undefined);
    },
  };
}

/**
 * An ioredis (or iovalkey: the same API) connection, each command watched as it is sent.
 * @param {typeof IoRedis} Redis
 * @param {string} url
 * @param {CommandWatcher} watch
 */
function watchedIoRedis(Redis, url, watch) {
  const client = new Redis(url, { disconnectTimeout: 200 });
  client.on('error', () => undefined);
  const sendCommand = client.sendCommand.bind(client);
  client.sendCommand = (command, stream) => {
    watch(command);
    return sendCommand(command, stream);
  };
  return {
    client,
    moduleOptions: { redis: client },
    close: async () => {
      await client.quit().catch(() => undefined);
    },
  };
}

/**
 * A GLIDE client, each `customCommand` (which the library sends everything through) watched.
 * @param {string} url
 * @param {CommandWatcher} watch
 */
async function watchedGlide(url, watch) {
  const { hostname, port } = new URL(url);
  const client = await GlideClient.createClient({
    addresses: [{ host: hostname, port: Number(port) }],
    requestTimeout: 10_000,
  });
  const customCommand = client.customCommand.bind(client);
  client.customCommand = (args, options) => {
    const promise = customCommand(args, options);
    watch({ name: String(args[0]).toLowerCase(), args: args.slice(1), promise });
    return promise;
  };
  return {
    client,
    moduleOptions: { redis: client },
    close: async () => client.close(),
  };
}
