import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

interface LockFile {
  packages: Record<string, { optionalDependencies?: Record<string, string> }>;
}

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * Where Node would find `name` from the package installed at `from`: its own node_modules,
 * then each enclosing one up to the top.
 */
function resolveIn(lock: LockFile, from: string, name: string): string | undefined {
  for (let dir = from; ;) {
    const candidate = `${dir ? `${dir}/` : ''}node_modules/${name}`;
    if (candidate in lock.packages) return candidate;
    if (!dir) return undefined;
    const parent = dir.lastIndexOf('/node_modules/');
    dir = parent === -1 ? '' : dir.slice(0, parent);
  }
}

/** Every optional dependency the lock file's packages declare but the lock file lacks. */
function missingOptionals(lock: LockFile): string[] {
  return Object.entries(lock.packages).flatMap(([path, entry]) =>
    Object.keys(entry.optionalDependencies ?? {})
      .filter((name) => !resolveIn(lock, path, name))
      .map((name) => `${name} (for ${path || 'the project'})`),
  );
}

describe('package-lock.json', () => {
  it("lists every platform's optional packages, so that npm ci works on every OS", () => {
    // An `npm install` run over an existing node_modules can drop the other platforms'
    // binaries from the lock file; `npm ci` elsewhere then refuses it. The fix:
    // `npm install --package-lock-only` (see CONTRIBUTING.md).
    const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as LockFile;
    expect(missingOptionals(lock)).toEqual([]);
  });
});
