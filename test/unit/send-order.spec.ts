import { SendOrder } from '../../src/store/postgres/postgres-order.js';

/** A request whose answer the test gives, recording when it was sent. */
class Request {
  sent = false;
  answer!: () => void;
  fail!: (error: Error) => void;

  constructor(
    private readonly log: string[],
    readonly name: string,
  ) {}

  send = (): Promise<string> => {
    this.sent = true;
    this.log.push(this.name);
    return new Promise<string>((resolve, reject) => {
      this.answer = () => resolve(this.name);
      this.fail = reject;
    });
  };
}

const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('SendOrder: requests of a pool reach the server in the order they were sent', () => {
  let log: string[];
  let order: SendOrder;
  const request = (name: string) => new Request(log, name);

  beforeEach(() => {
    log = [];
    order = new SendOrder();
  });

  it('sends a request at once when nothing on its ids is in flight', async () => {
    const first = request('first');
    const reply = order.run(['a'], first.send);
    expect(first.sent).toBe(true);
    first.answer();
    expect(await reply).toBe('first');
    await settle();
    expect(order.size).toBe(0);
  });

  it('holds a request until the one sent before it on the same id is answered', async () => {
    const renewal = request('renewal');
    const extend = request('extend');
    const renewed = order.run(['a'], renewal.send);
    const extended = order.run(['a'], extend.send);
    await settle();
    expect(log).toEqual(['renewal']);
    renewal.answer();
    await renewed;
    await settle();
    expect(log).toEqual(['renewal', 'extend']);
    extend.answer();
    expect(await extended).toBe('extend');
  });

  it('a batch waits for the requests on the ids it contains, and only those', async () => {
    const onA = request('a');
    const onC = request('c');
    const batch = request('batch a b');
    void order.run(['a'], onA.send);
    void order.run(['c'], onC.send);
    void order.run(['a', 'b'], batch.send);
    await settle();
    expect(batch.sent).toBe(false);
    onA.answer();
    await settle();
    // Sent as one request, though the request on c is still in flight.
    expect(log).toEqual(['a', 'c', 'batch a b']);
    const afterBatch = request('b');
    void order.run(['b'], afterBatch.send);
    await settle();
    expect(afterBatch.sent).toBe(false);
    batch.answer();
    await settle();
    expect(afterBatch.sent).toBe(true);
    onC.answer();
    afterBatch.answer();
  });

  it('a failed request lets the next one go, and fails only its own caller', async () => {
    const failing = request('failing');
    const next = request('next');
    const failed = order.run(['a'], failing.send);
    const answered = order.run(['a'], next.send);
    failing.fail(new Error('connection lost'));
    await expect(failed).rejects.toThrow('connection lost');
    await settle();
    expect(next.sent).toBe(true);
    next.answer();
    expect(await answered).toBe('next');
  });

  it('forgets an id once the last request on it settles: what it keeps is what is in flight', async () => {
    const requests = ['a', 'a b', 'b', 'c'].map((ids) => ({ ids, request: request(ids) }));
    const replies = requests.map(({ ids, request }) => order.run(ids.split(' '), request.send));
    expect(order.size).toBe(3);
    requests[3].request.answer();
    for (let i = 0; i < 3; i++) {
      await settle();
      requests[i].request.answer();
    }
    await Promise.all(replies);
    await settle();
    expect(order.size).toBe(0);
  });
});
