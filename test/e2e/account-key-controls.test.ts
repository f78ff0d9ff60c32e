/// <reference lib="dom" />
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { accountBrowser, expectAccessible, openSection, poll } from '../support/account-browser.js';
import { browserTier } from '../support/chromium.js';

/**
 * The account page's key controls in a real browser against the real app: disable and enable a
 * key, change its credits, every panel (the org's keys, the audit log) showing a change at once,
 * and the controls an admin set labelled, with no Enable the owner's PATCH would refuse.
 */
const tier = browserTier();
if (!tier.run) console.warn(tier.notice);

describe.skipIf(!tier.run)('key controls on the account page', () => {
  const b = accountBrowser(tier);
  const { errors } = b;
  const signedIn = (session: string) => b.signIn(session);
  const auditActions = (page: Page) => page.locator('#audit-list tbody tr th').allTextContents();

  it('shows a mint and a revoke in the org’s key list and audit log at once, without a reload', async () => {
    const w = await b.t.seed.world('owner');
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
    const w = await b.t.seed.world('owner');
    const minted = await b.t.api.post('/api-keys', w.session, { org_id: w.orgId, name: 'partner' });
    const page = await signedIn(w.session);
    const row = page.locator(`#keys-body tr[data-key-id="${minted.body.id}"]`);
    await poll(() => row.count()).toBe(1);

    await row.getByRole('button', { name: 'Disable partner' }).click();
    await poll(() => row.locator('.badge.status').textContent()).toBe('Disabled');
    expect((await b.t.api.get('/me', minted.body.key)).status).toBe(401);
    await poll(() => auditActions(page)).toContain('api_key.updated');
    await row.getByRole('button', { name: 'Enable partner' }).click();
    await poll(() => row.locator('.badge.status').textContent()).toBe('Active');
    expect((await b.t.api.get('/me', minted.body.key)).status).toBe(200);

    await row.getByRole('button', { name: 'Details of partner' }).click();
    const details = page.locator(`#details-${minted.body.id}`);
    await details.getByLabel('Credits (JSON)').fill('{"remaining": 5, "refill": {"amount": 5, "interval": "daily"}}');
    await details.getByRole('button', { name: 'Save controls' }).click();
    await poll(() => page.locator(`#details-${minted.body.id} [data-credits]`).textContent()).toMatch(
      /^5 left, refill to 5 /,
    );

    // A refusal shows the server's message beside the form.
    await page
      .locator(`#details-${minted.body.id}`)
      .getByLabel('Allowed networks (one CIDR a line)')
      .fill('10.0.0.1/8');
    await page.locator(`#details-${minted.body.id}`).getByRole('button', { name: 'Save controls' }).click();
    await poll(() => page.locator(`#details-${minted.body.id} .alert`).textContent()).toContain(
      'allowed_cidrs[0] has host bits set',
    );
    expect(errors).toEqual([]);
    await page.close();
  });

  it('labels the controls an admin set, offers no Enable on the owner’s row for a key an admin disabled, and one in the org’s list', async () => {
    const w = await b.t.seed.world('owner');
    const minted = await b.t.api.post('/api-keys', w.session, { org_id: w.orgId, name: 'vendor' });
    // The org's route: the owner acts as an admin here, even on their own key.
    const set = await b.t.api.request('PATCH', `/orgs/${w.orgId}/api-keys/${minted.body.id}`, {
      token: w.session,
      body: { enabled: false, rate_limits: [{ name: 'default', limit: 100, window_seconds: 1 }] },
    });
    expect(set.body.controls_set_by).toEqual({ enabled: 'admin', rate_limits: 'admin' });
    const page = await signedIn(w.session);
    const row = page.locator(`#keys-body tr[data-key-id="${minted.body.id}"]`);
    await poll(() => row.count()).toBe(1);

    const enable = row.getByRole('button', { name: 'Enable vendor' });
    expect(await enable.isDisabled()).toBe(true);
    expect(await enable.getAttribute('aria-describedby')).toBe(`enable-note-${minted.body.id}`);
    expect(await row.locator('.cell-status').textContent()).toContain(
      'set by an adminOnly an org owner or admin can enable it again.',
    );
    await row.getByRole('button', { name: 'Details of vendor' }).click();
    const details = page.locator(`#details-${minted.body.id}`);
    expect(await details.locator('.control-facts .badge.set-by').allTextContents()).toEqual(['set by an admin']);
    expect(await details.locator('.set-by-note').textContent()).toBe(
      'set by an admin You may tighten it, but not lift it.',
    );
    const orgRow = page.locator(`#org-keys-list tr[data-org-key-id="${minted.body.id}"]`);
    await poll(() => orgRow.locator('.badge.set-by').count()).toBe(2);
    await expectAccessible(page, 'controls set by an admin');
    // What the owner's own row may not do, the org's list does, through the org route.
    await openSection(page, 'org-keys');
    await orgRow.getByRole('button', { name: /^Enable vendor/ }).click();
    await poll(() => orgRow.getAttribute('data-status')).toBe('active');
    await poll(() => row.getAttribute('data-status')).toBe('active');
    expect(errors).toEqual([]);
    await page.close();
  });
});
