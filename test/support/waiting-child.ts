import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const WAITING_PROCESS = fileURLToPath(new URL('./waiting-process.mjs', import.meta.url));

/** What the waiting process asks for. */
export interface WaitingProcessOptions {
  ttl: number;
  limit?: number;
  mode?: 'read' | 'write';
}

/**
 * A separate process (its own LockModule and Redis connections) that acquires `key`, waiting as
 * long as it takes, and holds what it gets until it is killed. It sends `{ booted: true }` and
 * then `{ acquired: fencingToken }`.
 */
export function startWaitingProcess(
  url: string,
  prefix: string,
  key: string,
  { ttl, limit, mode }: WaitingProcessOptions,
): ChildProcess {
  return fork(WAITING_PROCESS, [], {
    execArgv: [],
    stdio: 'inherit',
    env: {
      ...process.env,
      WAITER_REDIS_URL: url,
      WAITER_KEY_PREFIX: prefix,
      WAITER_KEY: key,
      WAITER_TTL: String(ttl),
      ...(limit === undefined ? {} : { WAITER_LIMIT: String(limit) }),
      ...(mode === undefined ? {} : { WAITER_MODE: mode }),
    },
  });
}
