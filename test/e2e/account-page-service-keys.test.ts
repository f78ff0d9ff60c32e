/// <reference lib="dom" />
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { accountBrowser, openSection, poll } from '../support/account-browser.js';
import { browserTier } from '../support/chromium.js';

const tier = browserTier();
if (!tier.run) console.warn(tier.notice);

/** The account page's "Service keys" panel in a real Chromium against the real app on real PostgreSQL. */
describe.skipIf(!tier.run)('the account page: service keys for owners and admins', () => {
  const b = accountBrowser(tier, { permissions: ['clipboard-read', 'clipboard-write'] });
  const { errors } = b;
  const signedIn = (session: string) => b.signIn(session);

  const row = (page: Page, name: string) => page.locator('#service-keys-list tr', { hasText: name });

  it('mints with a one-time reveal, lists, rotates and revokes a service key; the key verifies until revoked', async () => {
    const w = await b.t.seed.world('owner');
    const page = await signedIn(w.session);
    await openSection(page, 'service-keys');
    await poll(() => page.locator('#service-keys-block').isVisible()).toBe(true);
    await poll(() => page.locator('#service-keys-list').textContent()).toContain('No service keys yet.');

    await page.locator('#service-key-name').fill('deploy bot');
    await page.locator('input[name="service-scope"][value="decisions:write"]').check();
    await page.locator('#service-key-submit').click();
    await poll(() => page.locator('#reveal-dialog').evaluate((d: HTMLDialogElement) => d.open)).toBe(true);
    const key = await page.locator('#reveal-key').inputValue();
    expect(key).toMatch(/^svc_live_/);
    expect((await b.t.api.get('/me', key)).body).toMatchObject({
      org_id: w.orgId,
      org_role: 'owner',
      scopes: ['decisions:read', 'decisions:write'],
    });
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
    expect((await b.t.api.get('/me', key)).status).toBe(401);
    expect((await b.t.api.get('/me', rotated)).status).toBe(200);

    await row(page, 'deploy bot').getByRole('button', { name: 'Revoke service key deploy bot' }).click();
    await page.locator('#revoke-name').fill('deploy bot');
    await page.locator('#revoke-confirm').click();
    await poll(() => row(page, 'deploy bot').getAttribute('data-status')).toBe('revoked');
    expect((await b.t.api.get('/me', rotated)).status).toBe(401);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('is not shown to a member', async () => {
    const w = await b.t.seed.world('owner');
    const member = await b.t.seed.colleague(w.orgId, 'member');
    const page = await signedIn(member.session);
    await poll(() => page.locator('#identity-role').textContent()).toBe('member');
    await poll(() => page.locator('#keys-empty').isVisible()).toBe(true);
    expect(await page.locator('#service-keys-block').isVisible()).toBe(false);
    expect(await page.locator('#sections-nav a[href="#service-keys"]').isVisible()).toBe(false);
    // Not even by its link: the keys show instead.
    await page.goto(`${page.url().split('#')[0]}#service-keys`);
    await poll(() => page.locator('#panel-keys').isVisible()).toBe(true);
    expect(await page.locator('#service-keys-block').isVisible()).toBe(false);
    const owner = await signedIn(w.session);
    await openSection(owner, 'service-keys');
    await poll(() => owner.locator('#service-keys-block').isVisible()).toBe(true);
    await owner.close();
    await page.close();
  });
});
