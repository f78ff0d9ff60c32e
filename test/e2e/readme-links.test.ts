import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, extname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../support/processes.js';

/** The user-facing documents: the README, every page under docs/, and the pages beside them. */
const DOCS = readdirSync(join(ROOT, 'docs'))
  .filter((f) => f.endsWith('.md'))
  .map((f) => `docs/${f}`);
const FILES = ['README.md', ...DOCS, 'SECURITY.md', 'CHANGELOG.md', 'bench/README.md'];
const README_MAX_LINES = 350;

/** The text outside fenced code blocks (a `# comment` in a shell block is no heading, a `[x](y)` there no link). */
function prose(text: string): string {
  let fence: string | null = null;
  const kept: string[] = [];
  for (const line of text.split('\n')) {
    const marker = /^\s*(```+|~~~+)/.exec(line)?.[1];
    if (marker && (fence === null || marker.startsWith(fence))) {
      fence = fence === null ? marker : null;
      kept.push('');
      continue;
    }
    kept.push(fence === null ? line : '');
  }
  return kept.join('\n');
}

/** GitHub's anchor for a heading: its text lower-cased, punctuation dropped, spaces as hyphens; repeats get -1, -2… */
function slugsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const slugs = new Set<string>();
  for (const m of prose(markdown).matchAll(/^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$/gm)) {
    const text = m[1]
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // links and images: their text
      .replace(/<[^>]+>/g, '') // inline HTML
      .replace(/[`*]/g, ''); // code and emphasis markers
    const base = text
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    slugs.add(n === 0 ? base : `${base}-${n}`);
  }
  for (const m of markdown.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) slugs.add(m[1]);
  return slugs;
}

/** Every inline link and image target, and every reference definition, outside code blocks. */
function linksOf(markdown: string): string[] {
  const text = prose(markdown);
  const inline = [...text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]);
  const defined = [...text.matchAll(/^\s{0,3}\[[^\]]+\]:\s*(\S+)/gm)].map((m) => m[1]);
  return [...inline, ...defined].map((l) => l.replace(/^<|>$/g, ''));
}

const read = (file: string) => readFileSync(resolve(ROOT, file), 'utf8');

/** The README and docs stand alone: every link stays inside the repository and points at a file, and every #anchor at a heading, that exists. */
describe('the README and docs/ link only within the repository, to files and headings that exist', () => {
  it.each(FILES)('%s', (file) => {
    const path = resolve(ROOT, file);
    const links = linksOf(read(file));
    for (const link of links) {
      expect(link, `${file}: ${link}`).not.toMatch(/^[a-z][a-z0-9+.-]*:/i); // no http(s):, file:, mailto:, ...
      const [target, anchor] = link.split('#', 2) as [string, string | undefined];
      const targetPath = target === '' ? path : resolve(dirname(path), decodeURIComponent(target));
      expect(relative(ROOT, targetPath).startsWith('..'), `${file}: ${link} leaves the repository`).toBe(false);
      expect(existsSync(targetPath), `${file}: ${link} does not exist`).toBe(true);
      if (anchor === undefined) continue;
      expect(
        statSync(targetPath).isFile() && extname(targetPath) === '.md',
        `${file}: ${link} has an anchor but is no Markdown file`,
      ).toBe(true);
      const slugs = slugsOf(readFileSync(targetPath, 'utf8'));
      expect([...slugs], `${file}: ${link}: no heading "#${anchor}" in ${relative(ROOT, targetPath)}`).toContain(
        decodeURIComponent(anchor),
      );
    }
  });

  it('the checker itself: GitHub anchors, code blocks, and a broken anchor that it reports', () => {
    const page =
      '# Client addresses (`TRUST_PROXY`)\n## Events, webhooks and leaked keys\n## Notes\n## Notes\n```sh\n# not a heading\n[x](nowhere.md)\n```\n';
    expect([...slugsOf(page)]).toEqual([
      'client-addresses-trust_proxy',
      'events-webhooks-and-leaked-keys',
      'notes',
      'notes-1',
    ]);
    expect(linksOf(page)).toEqual([]);
    expect(linksOf('see [a](docs/a.md#b) and ![c](c.png)\n[ref]: d.md')).toEqual(['docs/a.md#b', 'c.png', 'd.md']);
  });
});

describe('the README is a front door', () => {
  it(`stays at most ${README_MAX_LINES} lines`, () => {
    const lines = read('README.md').replace(/\n$/, '').split('\n').length;
    expect(lines, `README.md has ${lines} lines; move detail to docs/`).toBeLessThanOrEqual(README_MAX_LINES);
  });

  it('documents `npm test` as the test command (.ci/run runs it)', () => {
    expect(read('README.md')).toContain('npm test');
    expect(read('.ci/run')).toMatch(/^npm test$/m);
  });

  it('links every page under docs/', () => {
    const links = new Set(linksOf(read('README.md')).map((l) => l.split('#')[0]));
    for (const page of DOCS) expect([...links], `README.md does not link ${page}`).toContain(page);
  });
});

describe('user-facing docs state how things are, not the history of internal issues', () => {
  const INTERNAL = [
    /\bissues? #?\d+/i,
    /(^|[\s(,])#\d+\b/m,
    /\b(first|second|third|fourth|fifth|sixth|seventh|eighth|closing) round\b/i,
  ];
  it.each(['README.md', ...DOCS])('%s', (file) => {
    const text = read(file);
    for (const pattern of INTERNAL) {
      const hit = pattern.exec(text);
      expect(hit?.[0], `${file} mentions "${hit?.[0]}"; history goes to CHANGELOG.md`).toBeUndefined();
    }
  });
});
