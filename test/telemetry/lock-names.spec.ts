import { Injectable } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import {
  LockModule,
  LockOptionsError,
  LockService,
  MemoryLockSpace,
  WithLock,
} from '../../src/index.js';
import { OtelSdk } from '../support/otel.js';

@Injectable()
class Orders {
  @WithLock('order:<orderId>')
  async ship(orderId: string) {
    return orderId;
  }

  @WithLock('refund:<orderId>', { label: 'refunds' })
  async refund(orderId: string) {
    return orderId;
  }

  @WithLock((from: string, to: string) => [`account:${from}`, `account:${to}`])
  async transfer(from: string, to: string) {
    return `${from}->${to}`;
  }

  @WithLock(['stock:<sku>', 'cart:<cartId>'])
  async reserve(sku: string, cartId: string) {
    return `${sku}@${cartId}`;
  }
}

/** What `lock.name` says, so that dashboards group locks without one series per id. */
describe('lock.name', () => {
  let sdk: OtelSdk;
  let module: TestingModule;
  let locks: LockService;
  let orders: Orders;

  beforeAll(async () => {
    sdk = OtelSdk.start();
    module = await Test.createTestingModule({
      imports: [LockModule.forRoot({ store: 'memory', memorySpace: new MemoryLockSpace() })],
      providers: [Orders],
    }).compile();
    await module.init();
    locks = module.get(LockService);
    orders = module.get(Orders);
  });

  afterAll(async () => {
    await module?.close();
    await sdk.stop();
  });

  /** The `lock.name` of every acquisition recorded so far. */
  const names = async () =>
    new Set(
      (await sdk.values('lock.acquire.duration', {})).map(
        ({ attributes }) => attributes['lock.name'],
      ),
    );

  it('is the @WithLock template as written, never the key with the id', async () => {
    await orders.ship('o-1');
    await orders.ship('o-2');
    expect(await sdk.total('lock.acquire.duration', { 'lock.name': 'order:<orderId>' })).toBe(2);
    const all = await names();
    expect([...all].filter((name) => String(name).includes('o-1'))).toEqual([]);
  });

  it('is the label when one is given, on the decorator and on the manual API', async () => {
    await orders.refund('o-1');
    await locks.using('nightly-report:2026-11-25', () => undefined, { label: 'nightly-report' });
    const all = await names();
    expect(all).toContain('refunds');
    expect(all).toContain('nightly-report');
    expect(all).not.toContain('refund:<orderId>');
  });

  it('is each template of a list, and the method for a key function', async () => {
    await orders.reserve('sku-1', 'cart-1');
    await orders.transfer('a', 'b');
    expect(await sdk.total('lock.acquire.duration', { 'lock.name': 'stock:<sku>' })).toBe(1);
    expect(await sdk.total('lock.acquire.duration', { 'lock.name': 'cart:<cartId>' })).toBe(1);
    expect(await sdk.total('lock.acquire.duration', { 'lock.name': 'Orders.transfer' })).toBe(2);
  });

  it('is the manual key with its last part replaced by *', async () => {
    await (await locks.acquire('user:42:cart')).release();
    await (await locks.tryAcquire('payment:7'))!.release();
    await (await locks.acquire('maintenance')).release();
    const all = await names();
    expect(all).toContain('user:42:*');
    expect(all).toContain('payment:*');
    expect(all).toContain('*');
    expect(all).not.toContain('maintenance');
  });

  it('refuses a label that is not a short string', async () => {
    for (const label of ['', 42, 'x'.repeat(257)]) {
      await expect(
        locks.acquire('bad-label', { label: label as unknown as string }),
      ).rejects.toThrow(LockOptionsError);
    }
  });
});
