import { LockConnectionError, LockError } from '../../src/index.js';
import { timedCommand } from '../../src/store/timed-command.js';

describe('a store command with a time limit', () => {
  const command = timedCommand(20, 'lock:', 'Redis');

  it('answers what the call answers', async () => {
    await expect(command('lock:k', 'acquire', async () => 'OK')).resolves.toBe('OK');
  });

  it('turns a failure into a LockConnectionError that names the key and the operation', async () => {
    const cause = new Error('READONLY You can not write against a read only replica');
    const reply = command('lock:k', 'release', () => Promise.reject(cause));
    await expect(reply).rejects.toBeInstanceOf(LockConnectionError);
    await expect(reply).rejects.toMatchObject({ key: 'k', cause });
    await expect(reply).rejects.toThrow(`release failed: ${cause.message}`);
  });

  it('names a lock key as the caller did, and a fenced resource as it is', async () => {
    const fail = (key: string) => command(key, 'writeFenced', () => Promise.reject(new Error()));
    await expect(fail('lock:order:7')).rejects.toMatchObject({ key: 'order:7' });
    await expect(fail('account:7')).rejects.toMatchObject({ key: 'account:7' });
  });

  it('passes a lock error of the call itself as it is', async () => {
    const own = new LockError('Lock "k": the zxid is beyond Number.MAX_SAFE_INTEGER');
    await expect(command('lock:k', 'acquire', () => Promise.reject(own))).rejects.toBe(own);
  });

  it('gives up at its limit, and still hands over the late answer', async () => {
    let answer!: (reply: string) => void;
    const reply = command('lock:k', 'acquire', () => new Promise<string>((r) => (answer = r)));
    await expect(reply).rejects.toBeInstanceOf(LockConnectionError);
    await expect(reply).rejects.toThrow('acquire got no answer from Redis within 20 ms');
    answer('late');
    await expect(reply.late).resolves.toBe('late');
  });

  it('gives a timeout a cause too: an Error named TimeoutError that says what timed out', async () => {
    const reply = command('lock:k', 'renew', () => new Promise<never>(() => undefined));
    const error = (await reply.catch((e: unknown) => e)) as LockConnectionError;
    expect(error.key).toBe('k');
    expect(error.cause).toBeInstanceOf(Error);
    expect(error.cause).toMatchObject({
      name: 'TimeoutError',
      message: 'no answer from Redis within 20 ms',
    });
  });

  it('names the backend that did not answer', async () => {
    const zookeeper = timedCommand(20, 'lock:', 'ZooKeeper');
    const reply = zookeeper('lock:k', 'release', () => new Promise<never>(() => undefined));
    await expect(reply).rejects.toThrow('release got no answer from ZooKeeper within 20 ms');
  });
});

describe('LockConnectionError', () => {
  it('always has an Error as its cause, stating its reason when nothing failed underneath', () => {
    const error = new LockConnectionError('k', 'the lock store is closed');
    expect(error.cause).toBeInstanceOf(Error);
    expect(error.cause.message).toBe('the lock store is closed');
  });
});
