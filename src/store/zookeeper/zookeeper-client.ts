import { createRequire } from 'node:module';
import { LockOptionsError } from '../../lock.errors.js';

/** The package behind the ZooKeeper backend: an optional peer dependency, loaded on use. */
type ZooKeeperClientModule = typeof import('node-zookeeper-client');

const CLIENT_PACKAGE = 'node-zookeeper-client';

let clientModule: ZooKeeperClientModule | undefined;

/**
 * Loads `node-zookeeper-client` the first time the `zookeeper` option is used, so that Redis
 * users need not install it.
 * @throws LockOptionsError naming the `zookeeper` option when the package is missing
 */
export function loadZooKeeperClient(connectionString: string): ZooKeeperClientModule {
  if (clientModule) return clientModule;
  try {
    clientModule = createRequire(import.meta.url)(CLIENT_PACKAGE) as ZooKeeperClientModule;
  } catch (error) {
    throw new LockOptionsError(
      'zookeeper',
      connectionString,
      `the package ${CLIENT_PACKAGE} to be installed beside this library ` +
        `(npm install ${CLIENT_PACKAGE}): the ZooKeeper backend needs it ` +
        `(${error instanceof Error ? error.message.split('\n')[0] : String(error)})`,
    );
  }
  return clientModule;
}
