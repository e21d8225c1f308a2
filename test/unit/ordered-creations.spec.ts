import { jest } from '@jest/globals';
import {
  OrderedCreations,
  type CreationRequests,
} from '../../src/store/zookeeper/ordered-creations.js';
import { ZK_NO_NODE } from '../../src/store/zookeeper/zookeeper-session.js';

/** A session as the test drives it: every request waits for the test to answer it, in order. */
class Session implements CreationRequests {
  /** Requests as they were sent: `node <token>`, `parent`, `remove <path>`. */
  readonly sent: string[] = [];
  private readonly waiting: { resolve: (value: string) => void; reject: (e: unknown) => void }[] =
    [];
  private sequence = 0;

  createNode = (_parent: string, token: string) => this.request(`node ${token}`);
  createParent = () => this.request('parent');
  removeNode = (path: string) => this.request(`remove ${path}`);

  /** Answers the oldest request: a node's path (or '' for the others), or an error code. */
  async answer(code?: number): Promise<void> {
    const request = this.waiting.shift()!;
    if (code === undefined) request.resolve(`/lock/n-${String(this.sequence++).padStart(10, '0')}`);
    else request.reject(Object.assign(new Error(`code ${code}`), { code }));
    // Lets the answer's consequences (further requests) happen.
    for (let i = 0; i < 10; i++) await Promise.resolve();
  }

  private request(what: string): Promise<string> {
    this.sent.push(what);
    return new Promise((resolve, reject) => this.waiting.push({ resolve, reject }));
  }
}

describe('OrderedCreations: contenders’ nodes created in the order their callers came', () => {
  let session: Session;
  let creations: OrderedCreations;
  /** Every creation asked for in a test, settled (closing fails the unanswered) after it. */
  let made: Promise<string>[];
  const create = (token: string, parentMissing = false) => {
    const creation = creations.create('/lock', token, parentMissing, () => undefined);
    made.push(creation);
    return creation;
  };

  beforeEach(() => {
    session = new Session();
    creations = new OrderedCreations(session);
    made = [];
  });

  afterEach(async () => {
    const settled = Promise.allSettled(made);
    creations.close(new Error('closed'));
    await settled;
  });

  it('sends every creation at once while the lock node is there', async () => {
    const paths = [create('a'), create('b', false), create('c')];
    expect(session.sent).toEqual(['node a', 'node b', 'node c']);
    for (let i = 0; i < 3; i++) await session.answer();
    expect(await Promise.all(paths)).toEqual([
      '/lock/n-0000000000',
      '/lock/n-0000000001',
      '/lock/n-0000000002',
    ]);
  });

  it('creates a lock node it knows missing right ahead of the first creation', () => {
    void create('a', true);
    expect(session.sent).toEqual(['parent', 'node a']);
  });

  it('holds later callers back while the lock node is missing, then sends all again in order', async () => {
    const a = create('a');
    const b = create('b');
    await session.answer(ZK_NO_NODE);
    // c came after the lock node was found missing: it waits for a and b.
    const c = create('c');
    expect(session.sent).toEqual(['node a', 'node b']);
    await session.answer(ZK_NO_NODE);
    expect(session.sent.slice(2)).toEqual(['parent']);
    await session.answer();
    expect(session.sent.slice(3)).toEqual(['node a', 'node b', 'node c']);
    for (let i = 0; i < 3; i++) await session.answer();
    expect(await Promise.all([a, b, c])).toEqual([
      '/lock/n-0000000001',
      '/lock/n-0000000002',
      '/lock/n-0000000003',
    ]);
  });

  it('deletes a node that got in ahead of an earlier caller, and creates it again behind it', async () => {
    const a = create('a');
    const b = create('b');
    // Another session created the lock node between a's creation and b's.
    await session.answer(ZK_NO_NODE);
    await session.answer();
    expect(session.sent.slice(2)).toEqual(['remove /lock/n-0000000000']);
    await session.answer();
    expect(session.sent.slice(3)).toEqual(['parent']);
    await session.answer();
    expect(session.sent.slice(4)).toEqual(['node a', 'node b']);
    await session.answer();
    await session.answer();
    expect(await Promise.all([a, b])).toEqual(['/lock/n-0000000003', '/lock/n-0000000004']);
  });

  it('fails the creations waiting for a lock node that cannot be created, with its error', async () => {
    const a = create('a');
    const b = create('b');
    const failures = Promise.allSettled([a, b]);
    await session.answer(ZK_NO_NODE);
    await session.answer(ZK_NO_NODE);
    await session.answer(-4);
    expect((await failures).map((outcome) => outcome.status)).toEqual(['rejected', 'rejected']);
    // The line is clear: the next caller is sent at once.
    void create('c');
    expect(session.sent.at(-1)).toBe('node c');
  });

  it('stops waiting for an answer that never comes, so that the line goes on', async () => {
    jest.useFakeTimers({ doNotFake: ['queueMicrotask'] });
    try {
      creations = new OrderedCreations(session, 1_000);
      void create('a');
      const b = create('b').catch((error: unknown) => error);
      // a finds no lock node; b's answer is lost with its connection.
      await session.answer(ZK_NO_NODE);
      expect(session.sent).toEqual(['node a', 'node b']);
      jest.advanceTimersByTime(1_000);
      expect(await b).toBeInstanceOf(Error);
      for (let i = 0; i < 10; i++) await Promise.resolve();
      expect(session.sent.slice(2)).toEqual(['parent']);
    } finally {
      jest.useRealTimers();
    }
  });

  it('fails every creation not answered yet when closed, and leaves no timer behind', async () => {
    jest.useFakeTimers({ doNotFake: ['queueMicrotask'] });
    try {
      creations = new OrderedCreations(session, 1_000);
      const a = create('a').catch((error: unknown) => error);
      const b = create('b').catch((error: unknown) => error);
      await session.answer(ZK_NO_NODE);
      // a waits to be sent again behind the lock node; b waits for its answer.
      expect(jest.getTimerCount()).toBe(1);
      creations.close(new Error('closed'));
      expect(jest.getTimerCount()).toBe(0);
      expect(await a).toEqual(new Error('closed'));
      expect(await b).toEqual(new Error('closed'));
    } finally {
      jest.useRealTimers();
    }
  });
});
