import { Injectable } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { LockModule, LockOptionsError, WithLock } from '../../src/index.js';
import { backends, type Backend } from '../support/backends.js';
import { sleep, uniquePrefix } from '../support/lock-app.js';

/** Who is inside the decorated methods, across every instance of the app in this process. */
const inside = { calls: 0, mostCalls: 0, readers: 0, writers: 0, mostReaders: 0, clashes: 0 };

@Injectable()
class Api {
  /** At most 3 calls per tenant at once, over every instance. */
  @WithLock('api:<tenantId>', { limit: 3, waitTimeout: 20_000 })
  async call(tenantId: string): Promise<string> {
    inside.calls++;
    inside.mostCalls = Math.max(inside.mostCalls, inside.calls);
    await sleep(2 + Math.random() * 5);
    inside.calls--;
    return tenantId;
  }

  @WithLock('report:<id>', { mode: 'read', waitTimeout: 20_000 })
  async read(id: string): Promise<void> {
    if (inside.writers > 0) inside.clashes++;
    inside.readers++;
    inside.mostReaders = Math.max(inside.mostReaders, inside.readers);
    await sleep(2 + Math.random() * 5);
    inside.readers--;
    void id;
  }

  @WithLock('report:<id>', { mode: 'write', waitTimeout: 20_000 })
  async write(id: string): Promise<void> {
    if (inside.writers > 0 || inside.readers > 0) inside.clashes++;
    inside.writers++;
    await sleep(2);
    inside.writers--;
    void id;
  }
}

async function bootApi(options: object, provider: new () => object = Api): Promise<TestingModule> {
  const module = await Test.createTestingModule({
    imports: [LockModule.forRoot(options)],
    providers: [provider],
  }).compile();
  try {
    await module.init();
  } catch (error) {
    // A failed boot leaves nothing open.
    await module.close();
    throw error;
  }
  return module;
}

describe.each(backends)('@WithLock with limit and mode (%s store)', (_, makeBackend) => {
  const prefix = uniquePrefix();
  let store: Backend;
  const modules: TestingModule[] = [];

  beforeAll(async () => {
    store = makeBackend();
    for (let i = 0; i < 2; i++) modules.push(await bootApi(store.options({ keyPrefix: prefix })));
  });

  afterAll(async () => {
    await Promise.all(modules.map((module) => module.close()));
    await store.close();
  });

  const apiOf = (i: number) => modules[i % modules.length].get(Api);

  it('lets `limit` calls per key in at once over both instances, never more', async () => {
    inside.mostCalls = 0;
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) => apiOf(i).call('acme')));
    expect(results).toHaveLength(30);
    expect(inside.mostCalls).toBe(3);
  });

  it('lets readers share a key and keeps writers alone', async () => {
    inside.mostReaders = 0;
    inside.clashes = 0;
    await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        i % 4 === 0 ? apiOf(i).write('q3') : apiOf(i).read('q3'),
      ),
    );
    expect(inside.clashes).toBe(0);
    expect(inside.mostReaders).toBeGreaterThan(1);
  });

  it.each([
    [{ limit: 0 }, 'limit'],
    [{ limit: 2.5 }, 'limit'],
    [{ mode: 'shared' }, 'mode'],
    [{ limit: 2, mode: 'read' }, 'limit'],
  ])('fails the boot on %o, naming the method and the option', async (options, option) => {
    @Injectable()
    class Bad {
      @WithLock('x', options as never)
      async run() {}
    }
    const error: unknown = await bootApi(store.options({ keyPrefix: prefix }), Bad).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(LockOptionsError);
    expect((error as LockOptionsError).option).toBe(option);
    expect((error as LockOptionsError).message).toMatch(/Bad\.run/);
  });
});
