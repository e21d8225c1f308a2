import { createRequire } from 'node:module';
import { LockOptionsError } from '../../lock.errors.js';

const loaded = new Map<string, unknown>();

/**
 * Loads a Redis client package the first time the module connects through it, so that an app
 * installs only the client it uses: every client package is an optional peer dependency.
 * @param name the package, e.g. `redis`
 * @param kind the `redisClient` that chose it, which the error names
 * @throws LockOptionsError naming `redisClient` and the package to install when it is missing
 */
export function loadClientPackage<Module>(name: string, kind: string): Module {
  if (loaded.has(name)) return loaded.get(name) as Module;
  let module: Module;
  try {
    module = createRequire(import.meta.url)(name) as Module;
  } catch (error) {
    throw new LockOptionsError(
      'redisClient',
      kind,
      `the package ${name} to be installed beside this library (npm install ${name}), ` +
        `or another redisClient: the module connects to Redis through it ` +
        `(${error instanceof Error ? error.message.split('\n')[0] : String(error)})`,
    );
  }
  loaded.set(name, module);
  return module;
}
