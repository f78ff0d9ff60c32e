/// <reference lib="dom" />
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserTier } from '../support/chromium.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

/**
 * The account page's key controls in a real browser against the real app: disable and enable a
 * key, change its credits, and every panel (the org's keys, the audit log) showing a change at once.
 */
const poll = <T>(fn: () => T | Promise<T>) => expect.poll(fn, { timeout: 10_000, interval: 50 });
const tier = browserTier();
if (!tier.run) console.warn(tier.notice);

describe.skipIf(!tier.run)('key controls on the account page', () => {
  let t: TestApp;
  let context: BrowserContext;
  let userDataDir: string;
  const errors: string[] = [];

  beforeAll(async () => {
    t = await startTestApp();
    userDataDir = mkdtempSync(join(tmpdir(), 'account-controls-chromium-'));
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: tier.run ? tier.path : undefined,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
      viewport: { width: 1440, height: 900 },
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
    page.on('pageerror', (err) => errors.push(err.message));
    await page.goto(`${t.url}/account`);
    await page.getByLabel('Session token', { exact: true }).focus();
    await page.keyboard.insertText(session);
    await page.keyboard.press('Enter');
    return page;
  }
  const auditActions = (page: Page) => page.locator('#audit-list tbody tr th').allTextContents();

  it('shows a mint and a revoke in the org’s key list and audit log at once, without a reload', async () => {
    const w = await t.seed.world('owner');
    const page = await signedIn(w.session);
    await poll(() => page.locator('#org-keys-list').textContent()).toContain('No keys in this organisation yet');
    await page.locator('#create-open').click();
    await page.locator('#key-name').fill('ingest');
    await page.locator('#create-submit').click();
    await poll(() => page.locator('#reveal-dialog').evaluate((d: HTMLDialogElement) => d.open)).toBe(true);
    await poll(() => page.locator('#org-keys-list tr[data-org-key-id]').count()).toBe(1);
    await poll(() => auditActions(page)).toContain('api_key.minted');

    await page.locator('#reveal-dialog').evaluate((d: HTMLDialogElement) => d.close());
    await page.getByRole('button', { name: 'Revoke ingest', exact: true }).click();
    await page.locator('#revoke-name').fill('ingest');
    await page.locator('#revoke-confirm').click();
    await poll(() => page.locator('#org-keys-list tr[data-org-key-id]').getAttribute('data-status')).toBe('revoked');
    await poll(() => auditActions(page)).toContain('api_key.revoked');
    expect(errors).toEqual([]);
    await page.close();
  });

  it('disables a key with a badge and an Enable button, enables it again, and edits its credits', async () => {
    const w = await t.seed.world('owner');
    const minted = await t.api.post('/api-keys', w.session, { org_id: w.orgId, name: 'partner' });
    const page = await signedIn(w.session);
    const row = page.locator(`#keys-body tr[data-key-id="${minted.body.id}"]`);
    await poll(() => row.count()).toBe(1);

    await row.getByRole('button', { name: 'Disable partner' }).click();
    await poll(() => row.locator('.badge.status').textContent()).toBe('Disabled');
    expect((await t.api.get('/me', minted.body.key)).status).toBe(401);
    await poll(() => auditActions(page)).toContain('api_key.updated');
    await row.getByRole('button', { name: 'Enable partner' }).click();
    await poll(() => row.locator('.badge.status').textContent()).toBe('Active');
    expect((await t.api.get('/me', minted.body.key)).status).toBe(200);

    await row.getByRole('button', { name: 'Details of partner' }).click();
    const details = page.locator(`#details-${minted.body.id}`);
    await details.getByLabel('Credits (JSON)').fill('{"remaining": 5, "refill": {"amount": 5, "interval": "daily"}}');
    await details.getByRole('button', { name: 'Save controls' }).click();
    await poll(() => page.locator(`#details-${minted.body.id} [data-credits]`).textContent()).toMatch(/^5 left, refill to 5 /);

    // A refusal shows the server's message beside the form.
    await page.locator(`#details-${minted.body.id}`).getByLabel('Allowed networks (one CIDR a line)').fill('10.0.0.1/8');
    await page.locator(`#details-${minted.body.id}`).getByRole('button', { name: 'Save controls' }).click();
    await poll(() => page.locator(`#details-${minted.body.id} .alert`).textContent()).toContain('allowed_cidrs[0] has host bits set');
    expect(errors).toEqual([]);
    await page.close();
  });
});
