import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, normalize, posix } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** What `npm pack` puts in the tarball, without building it (no prepack) or writing it. */
function packedFiles(): Set<string> {
  const args = ['pack', '--dry-run', '--json', '--ignore-scripts', '--loglevel=error'];
  // Under `npm run`, npm says where it is; run bare, npm is found on PATH.
  const npm = process.env.npm_execpath;
  const [command, argv] = npm ? [process.execPath, [npm, ...args]] : ['npm', args];
  const output = execFileSync(command, argv, { cwd: root, encoding: 'utf8' });
  const [pack] = JSON.parse(output) as [{ files: Array<{ path: string }> }];
  return new Set(pack.files.map((file) => file.path));
}

/** GitHub's anchors for a page's headings (lower case, punctuation dropped, spaces to `-`). */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const [, heading] of markdown.matchAll(/^#{1,6} (.+)$/gm)) {
    const slug = heading
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

/** Every relative link and image of a Markdown page: `[text](target)`, `<img src="target">`. */
function relativeLinks(markdown: string): string[] {
  const prose = markdown.replace(/^```[\s\S]*?^```/gm, '');
  const targets = [
    ...[...prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((match) => match[1]),
    ...[...prose.matchAll(/<img [^>]*src="([^"]+)"/g)].map((match) => match[1]),
  ];
  return targets.filter((target) => !/^[a-z][a-z+.-]*:/i.test(target));
}

const shipped = packedFiles();
const pages = ['README.md', ...[...shipped].filter((path) => /^docs\/.*\.md$/.test(path))];

describe('the README and docs/ on the registry', () => {
  it('ship with the package, with the LICENSE and the CHANGELOG', () => {
    for (const file of ['README.md', 'LICENSE', 'CHANGELOG.md', 'CONTRIBUTING.md']) {
      expect([file, shipped.has(file)]).toEqual([file, true]);
    }
  });

  it('keep the README a front door of at most 400 lines, the depth being in docs/', () => {
    const lines = readFileSync(join(root, 'README.md'), 'utf8').trimEnd().split('\n');
    expect(lines.length).toBeLessThanOrEqual(400);
  });

  it.each(pages)('%s links only to files the package ships, and to anchors they have', (page) => {
    const broken: string[] = [];
    for (const link of relativeLinks(readFileSync(join(root, page), 'utf8'))) {
      const [path, anchor] = link.split('#');
      const target = path === '' ? page : posix.normalize(posix.join(posix.dirname(page), path));
      if (!shipped.has(target)) {
        broken.push(`${link}: ${target} is not in the package`);
      } else if (anchor && target.endsWith('.md')) {
        const anchors = anchorsOf(readFileSync(join(root, normalize(target)), 'utf8'));
        if (!anchors.has(anchor)) broken.push(`${link}: ${target} has no heading #${anchor}`);
      }
    }
    expect(broken).toEqual([]);
  });
});
