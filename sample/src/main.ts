import { createApp } from './app.factory.js';
import { configFromEnv, redactUrl } from './sample.config.js';

const config = configFromEnv();
const app = await createApp({ redisUrl: config.redisUrl });
app.enableShutdownHooks();
if (config.host) await app.listen(config.port, config.host);
else await app.listen(config.port);

const url = `http://${config.host ?? 'localhost'}:${config.port}`;
const json = `-H 'content-type: application/json'`;
console.log(
  [
    '',
    `nestjs-redis-lock sample listening on ${url}`,
    config.redisUrl
      ? `Locks and data in Redis at ${redactUrl(config.redisUrl)}.`
      : 'Locks and data in this process (set REDIS_URL to share them between processes).',
    '',
    'Try:',
    `  curl -X POST ${url}/lottery/alice/points ${json} -d '{"points":1}'`,
    `  curl -X POST ${url}/lottery/alice/draw`,
    `  curl ${url}/lottery/alice`,
    `  curl -i -X POST ${url}/assignments/hw1/submissions ${json} -d '{"userId":"alice"}'`,
    `  curl -X PUT ${url}/products/123 ${json} -d '{"name":"Desk lamp","durationMs":3000}'`,
    '',
    'Or run `npm run demo` to see concurrent requests with and without the lock.',
    '',
  ].join('\n'),
);
