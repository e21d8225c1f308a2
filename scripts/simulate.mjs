/**
 * `npm run simulate`: the deterministic simulation of the lock protocol (test/simulation/),
 * run from its TypeScript sources, with the library's, through the hooks of ts-hooks.mjs.
 * See docs/simulation.md.
 */
import { register } from 'node:module';

register('./ts-hooks.mjs', import.meta.url);
await import('../test/simulation/cli.js');
