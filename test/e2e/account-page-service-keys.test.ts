/// <reference lib="dom" />
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserTier } from '../support/chromium.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

const poll = <T>(fn: () => T | Promise<T>) => expect.poll(fn, { timeout: 10_000, interval: 50 });

const tier = browserTier();
if (!tier.run) console.warn(tier.notice);

/** The account page's "Service keys" panel in a real Chromium against the real app on real PostgreSQL. */
describe.skipIf(!tier.run)('the account page: service keys for owners and admins', () => {
  let t: TestApp;
  let context: BrowserContext;
  let userDataDir: string;
  const errors: string[] = [];

  beforeAll(async () => {
    t = await startTestApp();
    userDataDir = mkdtempSync(join(tmpdir(), 'account-service-keys-'));
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: tier.run ? tier.path : undefined,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
      viewport: { width: 1440, height: 900 },
      permissions: ['clipboard-read', 'clipboard-write'],
    });
    context.setDefaultTimeout(10_000);
  });

  afterAll(async () => {
    await context?.close();
    if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
    await t?.close();
  });

  async function signedIn(session: string): Promise<Page> {
    const page = await context.newPage();
    page.on('pageerror', (err) => errors.push(`pageerror: ${err.message}`));
    page.on('console', (msg) => {
      if (msg.type() === 'error' && !msg.text().startsWith('Failed to load resource')) errors.push(msg.text());
    });
    await page.goto(`${t.url}/account`);
    await page.getByLabel('Session token', { exact: true }).fill(session);
    await page.keyboard.press('Enter');
    return page;
  }

  const row = (page: Page, name: string) => page.locator('#service-keys-list tr', { hasText: name });

  it('mints with a one-time reveal, lists, rotates and revokes a service key; the key verifies until revoked', async () => {
    const w = await t.seed.world('owner');
    const page = await signedIn(w.session);
    await poll(() => page.locator('#service-keys-block').isVisible()).toBe(true);
    await poll(() => page.locator('#service-keys-list').textContent()).toContain('No service keys yet.');

    await page.locator('#service-key-name').fill('deploy bot');
    await page.locator('input[name="service-scope"][value="decisions:write"]').check();
    await page.locator('#service-key-submit').click();
    await poll(() => page.locator('#reveal-dialog').evaluate((d: HTMLDialogElement) => d.open)).toBe(true);
    const key = await page.locator('#reveal-key').inputValue();
    expect(key).toMatch(/^svc_live_/);
    expect((await t.api.get('/me', key)).body).toMatchObject({ org_id: w.orgId, org_role: 'owner', scopes: ['decisions:read', 'decisions:write'] });
    await page.locator('#reveal-copy').click();
    await page.locator('#reveal-close').click();
    await poll(() => page.locator('#reveal-dialog').evaluate((d: HTMLDialogElement) => d.open)).toBe(false);
    expect(await page.locator('body').textContent()).not.toContain(key);
    await poll(() => row(page, 'deploy bot').textContent()).toContain('you');
    // The org's key list shows it too.
    await poll(() => page.locator('#org-keys-list').textContent()).toContain('deploy bot');

    await row(page, 'deploy bot').getByRole('button', { name: 'Rotate service key deploy bot' }).click();
    await page.locator('#rotate-grace').selectOption('0');
    await page.locator('#rotate-confirm').click();
    await poll(() => page.locator('#reveal-dialog').evaluate((d: HTMLDialogElement) => d.open)).toBe(true);
    const rotated = await page.locator('#reveal-key').inputValue();
    expect(rotated).toMatch(/^svc_live_/);
    expect(rotated).not.toBe(key);
    await page.locator('#reveal-close').click();
    await page.locator('#reveal-discard').click();
    expect((await t.api.get('/me', key)).status).toBe(401);
    expect((await t.api.get('/me', rotated)).status).toBe(200);

    await row(page, 'deploy bot').getByRole('button', { name: 'Revoke service key deploy bot' }).click();
    await page.locator('#revoke-name').fill('deploy bot');
    await page.locator('#revoke-confirm').click();
    await poll(() => row(page, 'deploy bot').getAttribute('data-status')).toBe('revoked');
    expect((await t.api.get('/me', rotated)).status).toBe(401);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('is not shown to a member', async () => {
    const w = await t.seed.world('owner');
    const member = await t.seed.colleague(w.orgId, 'member');
    const page = await signedIn(member.session);
    await poll(() => page.locator('#identity-role').textContent()).toBe('member');
    expect(await page.locator('#service-keys-block').isVisible()).toBe(false);
    const owner = await signedIn(w.session);
    await poll(() => owner.locator('#service-keys-block').isVisible()).toBe(true);
    await owner.close();
    await page.close();
  });
});
