import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { allTierOnly, splitAcrossTiers } from '../support/tiers.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Every integration spec file (outside test/unit), relative to the repository. */
function integrationSpecs(): string[] {
  return readdirSync(join(root, 'test'), { recursive: true, encoding: 'utf8' })
    .filter((path) => path.endsWith('.spec.ts') && !path.startsWith('unit/'))
    .map((path) => `test/${path}`)
    .sort();
}

const inAllTierOnly = (file: string) =>
  allTierOnly.some((path) => (path.endsWith('/') ? file.startsWith(path) : file === path));

/**
 * What a spec starts beyond redis-server, read from what it imports and calls: such a spec
 * belongs to the all tier, wholly or for the cases it lists there.
 */
const beyondRedis =
  /ZooKeeper(Server|Ensemble)|PostgresServer|PgBouncer|valkeyServer|RedisClusterHarness|RedisSentinelHarness|redisClient: '(node-redis|glide|iovalkey)'/;

describe('the test tiers (test/support/tiers.js)', () => {
  it('name only files and folders that exist', () => {
    for (const path of [...allTierOnly, ...splitAcrossTiers]) {
      expect([path, existsSync(join(root, path))]).toEqual([path, true]);
    }
  });

  it('list a file as split across the tiers exactly when it chooses its cases by tier', () => {
    const choosing = integrationSpecs().filter((file) =>
      /\b(byTier|onlyIn)(<[^>]*>)?\(/.test(readFileSync(join(root, file), 'utf8')),
    );
    expect(choosing).toEqual([...splitAcrossTiers].sort());
    expect(splitAcrossTiers.filter(inAllTierOnly)).toEqual([]);
  });

  it('keep every spec that starts more than redis-server out of the quick tier, or split', () => {
    const quickOnly = integrationSpecs().filter(
      (file) => !inAllTierOnly(file) && !splitAcrossTiers.includes(file),
    );
    const offending = quickOnly.filter((file) =>
      beyondRedis.test(readFileSync(join(root, file), 'utf8')),
    );
    expect(offending).toEqual([]);
  });
});
