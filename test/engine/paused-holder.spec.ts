import { fork } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { sharedRedisUrl, sleep, uniquePrefix } from '../support/lock-app.js';

const PAUSED_HOLDER = fileURLToPath(
  new URL('../support/paused-holder-process.mjs', import.meta.url),
);

type Woke = {
  type: 'woke';
  gapMs: number;
  lockSignalAborted: boolean;
  leadershipSignalAborted: boolean;
  lockLost: boolean;
  leadershipLost: boolean;
  isLeader: boolean;
};

/**
 * A holder paused (SIGSTOP) past its ttl, as a long GC pause or a stopped container would:
 * the first look its own code takes after the pause, on an app timer that was due during it,
 * says the lock and the leadership are lost, from their validity alone, before any of the
 * library's timers has run. The process holds a lock with a 1 s ttl and leads an election.
 */
describe('a holder paused past its ttl', () => {
  it('learns at its first look that its lock and its leadership are lost', async () => {
    const child = fork(PAUSED_HOLDER, [], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env: {
        ...process.env,
        PAUSED_REDIS_URL: sharedRedisUrl(),
        PAUSED_PREFIX: uniquePrefix(),
      },
    });
    try {
      const [holding] = (await once(child, 'message')) as [{ type: string }];
      expect(holding).toEqual({ type: 'holding' });
      const woke = new Promise<Woke>((resolve) => child.on('message', resolve));
      child.kill('SIGSTOP');
      await sleep(2_500);
      child.kill('SIGCONT');
      const seen = await woke;
      expect(seen).toMatchObject({ type: 'woke', lockLost: true, leadershipLost: true });
      expect(seen.isLeader).toBe(false);
      expect(seen.gapMs).toBeGreaterThan(1_000);
      await once(child, 'exit');
    } finally {
      child.kill('SIGKILL');
    }
  });
});
