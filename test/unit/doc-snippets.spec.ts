import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkSnippets, documentationFiles, extractSnippets } from '../support/doc-snippets.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const snippets = documentationFiles(root).flatMap((file) => extractSnippets(root, file));

describe('the TypeScript snippets of the README and docs/', () => {
  const checked = snippets.filter((snippet) => snippet.mode !== 'skip');
  let errors: Map<string, string[]>;
  beforeAll(() => (errors = checkSnippets(root, checked)), 60_000);

  it('finds the snippets, and skips few of them', () => {
    expect(checked.length).toBeGreaterThanOrEqual(15);
    expect(snippets.length - checked.length).toBeLessThanOrEqual(2);
  });

  it.each(checked.map((snippet) => [snippet.where, snippet] as const))('%s compiles', (where) => {
    expect(errors.get(where)).toEqual([]);
  });
});
