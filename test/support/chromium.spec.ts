import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { browserTier, findChromium } from './chromium.js';

describe('finding a Chromium for the browser tests', () => {
  const bin = mkdtempSync(join(tmpdir(), 'kui-chromium-spec-'));
  const fake = join(bin, 'chromium');
  writeFileSync(fake, '#!/bin/sh\n');
  chmodSync(fake, 0o755);
  afterAll(() => rmSync(bin, { recursive: true, force: true }));

  it('finds chromium on the PATH', () => {
    expect(findChromium({ PATH: `/nonexistent:${bin}` })).toBe(fake);
    expect(browserTier({ PATH: bin })).toEqual({ run: true, path: fake });
  });

  it('honours CHROMIUM_PATH over the PATH, and a path that does not exist means none', () => {
    expect(findChromium({ PATH: bin, CHROMIUM_PATH: process.execPath })).toBe(process.execPath);
    expect(findChromium({ PATH: bin, CHROMIUM_PATH: '/nonexistent' })).toBeNull();
  });

  it('without a browser, skips with a notice that says how to get one', () => {
    const tier = browserTier({ PATH: '/nonexistent' });
    expect(tier).toMatchObject({ run: false, fail: false });
    expect(!tier.run && tier.notice).toMatch(/SKIPPED.*apt-get install -y chromium/);
  });

  it('without a browser under CI=true, fails instead of skipping', () => {
    const tier = browserTier({ PATH: bin, CHROMIUM_PATH: '/nonexistent', CI: 'true' });
    expect(tier).toMatchObject({ run: false, fail: true });
    expect(!tier.run && tier.notice).toMatch(/CHROMIUM_PATH=\/nonexistent/);
  });
});
