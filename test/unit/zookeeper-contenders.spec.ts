import { Contenders } from '../../src/store/zookeeper/contender.js';

/**
 * A contender's node creation is sent without the lock node's creation ahead of it only when
 * another contender of its process stands under that lock node (or is on its way there) in the
 * same session, staying: then the lock node is there when the creation is applied.
 */
describe('ZooKeeper: whether a contender has company of its process under its lock node', () => {
  const contenders = () => new Contenders(() => undefined);

  it('has none alone, nor beside contenders of other keys', () => {
    const all = contenders();
    all.enter('lock:b', 'token-1', '/locks/lock:b', 1);
    expect(all.accompanied(all.enter('lock:a', 'token-2', '/locks/lock:a', 1))).toBe(false);
  });

  it('has some beside a contender of its key in its session', () => {
    const all = contenders();
    all.enter('lock:a', 'token-1', '/locks/lock:a', 1);
    expect(all.accompanied(all.enter('lock:a', 'token-2', '/locks/lock:a', 1))).toBe(true);
  });

  it('has none beside a contender that leaves, or is gone, or was of another session', () => {
    const all = contenders();
    const leaving = all.enter('lock:a', 'token-1', '/locks/lock:a', 1);
    const gone = all.enter('lock:a', 'token-2', '/locks/lock:a', 1);
    all.enter('lock:a', 'token-3', '/locks/lock:a', 1);
    leaving.departed = true;
    all.forget(gone);
    all.sessionExpired();
    expect(all.accompanied(all.enter('lock:a', 'token-4', '/locks/lock:a', 2))).toBe(false);
  });

  it('has none beside its own token’s earlier contender, which it replaces', () => {
    const all = contenders();
    all.enter('lock:a', 'token-1', '/locks/lock:a', 1);
    expect(all.accompanied(all.enter('lock:a', 'token-1', '/locks/lock:a', 1))).toBe(false);
  });
});

/**
 * When a session expires its waiters are woken, and one may line up again at once, in the
 * same tick: its new contender belongs to the next session, and must keep it. Were it taken
 * for one of the expired session's, its next attempt would line it up a third time and leave
 * the second node, alive in the live session, at the head of the line for good.
 */
describe('ZooKeeper: contenders when their session expires', () => {
  it('leaves a contender that lines up again while the expired ones are woken in its session', () => {
    const lined: number[] = [];
    const woken = new Set<string>();
    const all: Contenders = new Contenders(({ key, token, parent }) => {
      // A waiter is woken once by the expiry: it lines up again, once.
      if (woken.has(token)) return;
      woken.add(token);
      lined.push(all.enter(key, token, parent, 2).session);
    });
    all.enter('lock:a', 'token-1', '/locks/lock:a', 1);
    all.enter('lock:a', 'token-2', '/locks/lock:a', 1);
    all.sessionExpired();
    expect(lined).toEqual([2, 2]);
    expect([all.get('token-1')?.session, all.get('token-2')?.session]).toEqual([2, 2]);
  });
});
