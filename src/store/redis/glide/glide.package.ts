import { createRequire } from 'node:module';
import type { GlideClient, GlideClusterClient } from '@valkey/valkey-glide';
import type { GlideClientLike } from '../../../options/lock-options.interface.js';
import { LockOptionsError } from '../../../lock.errors.js';

/** The package behind the GLIDE client: an optional peer dependency, loaded on use. */
export type GlideModule = typeof import('@valkey/valkey-glide');

/** A Valkey GLIDE client, standalone or Cluster. */
export type AnyGlideClient = GlideClient | GlideClusterClient;

const GLIDE_PACKAGE = '@valkey/valkey-glide';

let glideModule: GlideModule | undefined;

/**
 * Loads `@valkey/valkey-glide` the first time the module creates a GLIDE client, so that the
 * users of another client need not install it (it brings a native library of its own).
 * @param option the module option that asked for GLIDE, for the error
 * @param value its value, for the error (never shown with a password: see `LockOptionsError`)
 * @throws LockOptionsError naming the option when the package is missing, or too old to
 *   subscribe to channels after a client is created (before 2.3)
 */
export function loadGlide(option: string, value: unknown): GlideModule {
  if (glideModule) return glideModule;
  let loaded: GlideModule;
  try {
    loaded = createRequire(import.meta.url)(GLIDE_PACKAGE) as GlideModule;
  } catch (error) {
    throw new LockOptionsError(
      option,
      value,
      `the package ${GLIDE_PACKAGE} to be installed beside this library ` +
        `(npm install ${GLIDE_PACKAGE}): the GLIDE client needs it ` +
        `(${error instanceof Error ? error.message.split('\n')[0] : String(error)})`,
    );
  }
  if (!subscribesOnTheFly(loaded.GlideClient.prototype)) throw tooOld(option, value);
  glideModule = loaded;
  return loaded;
}

/**
 * Tells a GLIDE client (of any copy of the package, hence no `instanceof`) from an ioredis or
 * node-redis client and from options: only GLIDE's clients have `invokeScript`.
 */
export function isGlideClient(value: unknown): value is GlideClientLike {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as GlideClient).invokeScript === 'function' &&
    typeof (value as GlideClient).customCommand === 'function'
  );
}

/** A `GlideClusterClient`: the one with routed script calls. */
export function isGlideClusterClient(value: unknown): value is GlideClusterClient {
  return (
    isGlideClient(value) &&
    typeof (value as GlideClusterClient).invokeScriptWithRoute === 'function'
  );
}

/**
 * The store subscribes to a key's channel when a caller starts to wait for it, which GLIDE
 * allows from 2.3 on; before, a client's channels were fixed when it was created.
 * @throws LockOptionsError naming the option when `client` is of an older GLIDE
 */
export function checkGlideVersion(client: GlideClientLike, option: string): AnyGlideClient {
  if (!subscribesOnTheFly(client)) throw tooOld(option, 'a GLIDE client');
  // The shape that isGlideClient checked, of a version that has what the store calls.
  return client as unknown as AnyGlideClient;
}

function subscribesOnTheFly(client: object): boolean {
  return typeof (client as Partial<GlideClient>).subscribe === 'function';
}

function tooOld(option: string, value: unknown): LockOptionsError {
  return new LockOptionsError(
    option,
    value,
    `${GLIDE_PACKAGE} 2.3 or later, which subscribes to channels on a running client`,
  );
}
