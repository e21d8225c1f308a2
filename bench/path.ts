/**
 * `npm run bench:path`: how much of the library one call runs. On a throwaway redis-server,
 * this library (as the benchmark's adapter builds it) warms up, then V8's precise coverage
 * counts the library's functions that run during one uncontended `using` on Redis, and during
 * one `using` that waits while another caller of the same process holds the key, with that
 * caller's release: the files they belong to, and how many functions of each. A measure of the path's shape, not of
 * its speed: a call that crosses fewer files and functions is easier to follow and to change.
 */
import { Session } from 'node:inspector/promises';
import { fileURLToPath } from 'node:url';
import { ThisLibraryAdapter } from './adapters/this-library.js';
import { startRedis } from './redis/server.js';
import { sleep } from './stats.js';

interface Crossed {
  files: Map<string, number>;
  functions: number;
}

/** The library's files (dist/, as users import it), by the functions of each that ran. */
function crossed(coverage: Awaited<ReturnType<typeof take>>): Crossed {
  const files = new Map<string, number>();
  let functions = 0;
  for (const script of coverage) {
    const match = /\/dist\/(.+)\.js$/.exec(
      script.url.startsWith('file:') ? fileURLToPath(script.url) : script.url,
    );
    if (!match || script.url.includes('node_modules') || script.url.includes('dist-apps')) {
      continue;
    }
    // A function's first range covers it whole: its count is how often it ran.
    const ran = script.functions.filter(
      (fn) => fn.functionName !== '' && (fn.ranges[0]?.count ?? 0) > 0,
    ).length;
    if (ran === 0) continue;
    files.set(match[1], ran);
    functions += ran;
  }
  return { files, functions };
}

async function take(session: Session) {
  const { result } = await session.post('Profiler.takePreciseCoverage');
  return result;
}

/** Runs `call` alone under coverage (what ran before it is reset) and says what it crossed. */
async function measure(session: Session, call: () => Promise<unknown>): Promise<Crossed> {
  await take(session);
  await call();
  // Timers the call left behind that belong to it (the watchdog's first tick is not: the
  // section is shorter than a renewal's period).
  await sleep(5);
  return crossed(await take(session));
}

function report(name: string, { files, functions }: Crossed): string {
  const lines = [...files].sort(([a], [b]) => a.localeCompare(b));
  return [
    `${name}: ${files.size} files, ${functions} functions`,
    ...lines.map(([file, ran]) => `  ${String(ran).padStart(3)}  ${file}`),
  ].join('\n');
}

async function main(): Promise<void> {
  const redis = await startRedis();
  const library = await ThisLibraryAdapter.create(redis.url);
  const session = new Session();
  session.connect();
  try {
    const { locks } = library;
    for (let i = 0; i < 50; i++) await locks.using('path:warm', async () => undefined);
    await session.post('Profiler.enable');
    await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });
    const alone = await measure(session, () => locks.using('path:alone', async () => undefined));
    // Contended: the measured call waits while another caller holds the key, which releases.
    const holder = await locks.acquire('path:busy', { ttl: 10_000 });
    const handed = await measure(session, async () => {
      const waiting = locks.using('path:busy', async () => undefined, { waitTimeout: 5_000 });
      await sleep(30);
      await holder.release();
      await waiting;
    });
    console.log(report('uncontended using', alone));
    console.log(report('using that waits for a release (the release included)', handed));
  } finally {
    session.disconnect();
    await library.close();
    await redis.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${String(error)}\n`);
  process.exitCode = 1;
});
