import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ACCOUNT_CSP, loadAccountAssets } from './account-assets.js';

describe('the account page assets', () => {
  const assets = loadAccountAssets();
  const html = assets.page.body.toString('utf8');
  const js = assets.script.body.toString('utf8');

  it('loads the page, script, style sheet and icon with their content types and strong ETags', () => {
    expect(assets.page.contentType).toBe('text/html; charset=utf-8');
    expect(assets.script.contentType).toBe('text/javascript; charset=utf-8');
    expect(assets.style.contentType).toBe('text/css; charset=utf-8');
    expect(assets.icon.contentType).toBe('image/svg+xml');
    for (const asset of Object.values(assets)) {
      expect(asset.body.length).toBeGreaterThan(0);
      expect(asset.etag).toMatch(/^"[\w-]{27}"$/);
    }
  });

  it('has no inline script or style and nothing from another origin, so the strict policy holds', () => {
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)/);
    expect(html).not.toMatch(/<style|\sstyle=|\son[a-z]+=/i);
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
    expect(ACCOUNT_CSP).not.toMatch(/unsafe-/);
  });

  it('builds the DOM without any HTML-string sink', () => {
    expect(js).not.toMatch(/\.(innerHTML|outerHTML)\s*=|insertAdjacentHTML|document\.write|\beval\(|new Function/);
  });

  it('serves the page’s modules as one bundled script that calls the API through the typed client', () => {
    // Bundled: nothing left to import (the policy allows only this one script to run).
    expect(js).not.toMatch(/^\s*(import|export)\s/m);
    expect(js).toContain('new KeysUsageIdentityClient(');
    expect(js).toContain('"Api-Version"');
  });

  it('refuses to start without its files rather than serving 404s later', () => {
    const empty = mkdtempSync(join(tmpdir(), 'account-assets-'));
    try {
      expect(() => loadAccountAssets(empty)).toThrow(/index\.html/);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
