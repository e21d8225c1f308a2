import 'reflect-metadata';
import { startRedis, BenchClients } from './bench/redis/server.js';
import { runInstances } from './bench/workloads/instances.js';
const redis = await startRedis();
const clients = new BenchClients(redis.url);
await clients.connect();
try {
  const r = await runInstances(['nestjs-redis-lock', 'redis-semaphore'], clients, redis.url);
  for (const [id, v] of Object.entries(r)) {
    const pick = Object.fromEntries(Object.entries(v).filter(([k, x]) => typeof x === 'number'));
    console.log(id, JSON.stringify(pick));
  }
} finally {
  await clients.close();
  await redis.stop();
}
