import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
const require = createRequire(import.meta.url);
/** Reads a dependency's version from its package.json, for naming it in the tables. */
export async function versionOf(pkg) {
    // Walk up from the package's entry point: not every package exports `./package.json`.
    let dir = require.resolve(pkg);
    for (let depth = 0; depth < 6; depth++) {
        dir = dirname(dir);
        try {
            const json = JSON.parse(await readFile(join(dir, 'package.json'), 'utf8'));
            if (json.name === pkg)
                return String(json.version).replace(/^v/, '');
        }
        catch {
            // no package.json here; keep walking up
        }
    }
    return 'unknown';
}
//# sourceMappingURL=types.js.map