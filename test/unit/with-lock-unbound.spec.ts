import { Injectable } from '@nestjs/common';
import { firstValueFrom, Observable, of } from 'rxjs';
import { LockError, WithLock } from '../../src/index.js';

/**
 * A decorated method of an instance that no LockModule bound (created with `new`, or in an app
 * that does not import the module) refuses to run unlocked, and says so the way the method
 * fails once bound: as a rejected promise, or as an erroring stream for a method that returns an
 * Observable. Nothing throws before the caller can attach its handler.
 */
describe('a @WithLock method that no LockModule has bound', () => {
  @Injectable()
  class Loose {
    ran = false;

    @WithLock('x')
    async run(): Promise<string> {
      this.ran = true;
      return 'unprotected';
    }

    @WithLock('x')
    stream(): Observable<string> {
      this.ran = true;
      return of('unprotected');
    }
  }

  it('returns a promise that rejects with a LockError, without running the method', async () => {
    const loose = new Loose();
    let call: Promise<string> | undefined;
    expect(() => (call = loose.run())).not.toThrow();
    expect(call).toBeInstanceOf(Promise);
    await expect(call).rejects.toBeInstanceOf(LockError);
    await expect(call).rejects.toThrow(/Loose\.run: no LockModule has bound this method/);
    expect(loose.ran).toBe(false);
  });

  it('reaches a .catch() attached to the call', async () => {
    const caught = await new Loose().run().catch((error: unknown) => error);
    expect(caught).toBeInstanceOf(LockError);
  });

  it('returns a stream that errors for a method that returns an Observable', async () => {
    const loose = new Loose();
    let stream: Observable<string> | undefined;
    expect(() => (stream = loose.stream())).not.toThrow();
    expect(stream).toBeInstanceOf(Observable);
    await expect(firstValueFrom(stream!)).rejects.toThrow(/Loose\.stream: no LockModule/);
    expect(loose.ran).toBe(false);
  });
});
