import { existsSync, readFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../support/processes.js';

/** The README and the docs stand alone: every link stays inside the repository and points at a file that exists. */
describe('the README and docs/ link only within the repository', () => {
  it.each(['README.md', 'docs/contract.md', 'docs/embedding.md', 'docs/performance.md', 'SECURITY.md', 'bench/README.md'])('%s', (file) => {
    const path = resolve(ROOT, file);
    const text = readFileSync(path, 'utf8');
    const links = [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]);
    for (const link of links) {
      if (link.startsWith('#')) continue;
      expect(link, `${file}: ${link}`).not.toMatch(/^[a-z]+:/i); // no http(s):, file:, ...
      const target = resolve(dirname(path), link.split('#')[0]);
      expect(relative(ROOT, target).startsWith('..'), `${file}: ${link} leaves the repository`).toBe(false);
      expect(existsSync(target), `${file}: ${link} does not exist`).toBe(true);
    }
  });
});
