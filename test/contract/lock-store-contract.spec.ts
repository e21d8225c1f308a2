import { byTier } from '../support/tiers.js';
import { contractFixtures } from './contract-backends.js';
import { StoreContract } from './lock-store-harness.js';
import { holdingCases } from './lock-store-holding.js';
import { lateReplyCases } from './lock-store-late-replies.js';
import { noticeCases } from './lock-store-notices.js';
import { successorCases, waitingCases } from './lock-store-waiting.js';

/**
 * The `LockStore` contract (src/store/lock-store.interface.ts), held against every backend's
 * store without Nest: each store built from the fixture's module options as the module builds
 * it, and called as the engine calls it. What a store does not do is read from the
 * capabilities it declares, never from a table of backends. The module-level contract
 * (store-contract.spec.ts) runs the same fixtures through LockService.
 */
describe.each(byTier(contractFixtures))('the LockStore contract on %s', (_, start) => {
  const ctx = StoreContract.on(start);
  holdingCases(ctx);
  waitingCases(ctx);
  successorCases(ctx);
  noticeCases(ctx);
  lateReplyCases(ctx);
});
