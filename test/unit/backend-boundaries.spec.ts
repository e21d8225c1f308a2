import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const src = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'src');
const stores = join(src, 'store');

/** Every TypeScript file under `dir`, as paths relative to `src` with `/` separators. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => relative(src, join(dir, file)).split(sep).join('/'));
}

/** What a file imports: package names as written, relative imports as paths under `src`. */
function importsOf(file: string): string[] {
  const text = readFileSync(join(src, file), 'utf8');
  return [...text.matchAll(/^(?:import|export)\b[^;]*?\bfrom '([^']+)'/gms)].map(([, target]) =>
    target.startsWith('.')
      ? relative(src, resolve(dirname(join(src, file)), target))
          .split(sep)
          .join('/')
      : target,
  );
}

/** The backend folder a path under `src` lies in (`store/<backend>/…`), if any. */
function backendOf(path: string): string | undefined {
  return /^store\/([^/]+)\//.exec(path)?.[1];
}

const backends = readdirSync(stores, { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name);

describe('the backend folders', () => {
  it('are the ones the store contract is written for', () => {
    expect(backends).toEqual(expect.arrayContaining(['memory', 'redis', 'redlock', 'zookeeper']));
  });

  it.each(backends)('%s imports no other backend (RedLock may build on Redis)', (backend) => {
    const allowed = backend === 'redlock' ? ['redlock', 'redis'] : [backend];
    const crossings = filesUnder(join(stores, backend)).flatMap((file) =>
      importsOf(file)
        .filter((target) => {
          const other = backendOf(target);
          return other !== undefined && !allowed.includes(other);
        })
        .map((target) => `${file} imports ${target}`),
    );
    expect(crossings).toEqual([]);
  });
});

describe('the Redis client libraries', () => {
  const packages = ['ioredis', 'iovalkey', 'redis', '@valkey/valkey-glide'];

  it('are imported for their types only, so that an app installs only the one it uses', () => {
    const valueImports = filesUnder(src).flatMap((file) => {
      const text = readFileSync(join(src, file), 'utf8');
      return [...text.matchAll(/^(?:import|export)\b(?!\s+type\b)[^;]*?\bfrom '([^']+)'/gms)]
        .filter(([, target]) => packages.includes(target))
        .map(([, target]) => `${file} imports ${target}`);
    });
    expect(valueImports).toEqual([]);
  });

  it('are imported, as types, only by the Redis store and the option types users pass', () => {
    const importers = filesUnder(src).filter((file) =>
      importsOf(file).some((target) => packages.includes(target)),
    );
    const allowed = (file: string) =>
      file.startsWith('store/redis/') ||
      file === 'options/lock-options.interface.ts' ||
      file === 'options/redis-client-like.interface.ts';
    expect(importers.filter((file) => !allowed(file))).toEqual([]);
    expect(importers.length).toBeGreaterThan(0);
  });

  it('GLIDE is imported only by its adapter', () => {
    const importers = filesUnder(src).filter((file) =>
      importsOf(file).includes('@valkey/valkey-glide'),
    );
    expect(importers.filter((file) => !file.startsWith('store/redis/glide/'))).toEqual([]);
    expect(importers.length).toBeGreaterThan(0);
  });
});
