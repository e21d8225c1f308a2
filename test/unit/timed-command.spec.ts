import { LockConnectionError, LockError } from '../../src/index.js';
import { timedCommand } from '../../src/store/redis/timed-command.js';

describe('a Redis command with a time limit', () => {
  const command = timedCommand(20);

  it('answers what the call answers', async () => {
    await expect(command('k', 'acquire', async () => 'OK')).resolves.toBe('OK');
  });

  it('turns a failure into a LockConnectionError that names the key and the operation', async () => {
    const cause = new Error('READONLY You can not write against a read only replica');
    const reply = command('k', 'release', () => Promise.reject(cause));
    await expect(reply).rejects.toBeInstanceOf(LockConnectionError);
    await expect(reply).rejects.toMatchObject({ key: 'k', cause });
    await expect(reply).rejects.toThrow(`release failed: ${cause.message}`);
  });

  it('passes a lock error of the call itself as it is', async () => {
    const own = new LockError('Lock "k": the zxid is beyond Number.MAX_SAFE_INTEGER');
    await expect(command('k', 'acquire', () => Promise.reject(own))).rejects.toBe(own);
  });

  it('gives up at its limit, and still hands over the late answer', async () => {
    let answer!: (reply: string) => void;
    const reply = command('k', 'acquire', () => new Promise<string>((r) => (answer = r)));
    await expect(reply).rejects.toBeInstanceOf(LockConnectionError);
    await expect(reply).rejects.toThrow('acquire got no answer from Redis within 20 ms');
    answer('late');
    await expect(reply.late).resolves.toBe('late');
  });
});
