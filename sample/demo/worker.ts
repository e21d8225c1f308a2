/**
 * One app process of the demo's cluster: boots the sample with the primary's REDIS_URL and
 * PORT, and tells the primary when it listens. The primary stops it with SIGTERM, on which it
 * closes the app; it also ends when the primary goes away.
 */
import { createApp } from '../src/app.factory.js';
import { configFromEnv } from '../src/sample.config.js';

const config = configFromEnv();
const app = await createApp({ redisUrl: config.redisUrl }, ['warn', 'error']);
// Ctrl-C reaches every process of the terminal's group; the primary decides what happens then.
process.on('SIGINT', () => undefined);
app.enableShutdownHooks(['SIGTERM']);
await app.listen(config.port, config.host ?? '127.0.0.1');
process.send?.({ type: 'ready' });
