/// <reference lib="dom" />
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { accountBrowser, expectAccessible, openSection, poll } from '../support/account-browser.js';
import { browserTier } from '../support/chromium.js';

/**
 * The account page's key policy for owners and admins, in a real browser (Debian's Chromium)
 * against the real app on real PostgreSQL: the pending approvals with their count badge,
 * approve and deny, and the policy form (owners change it, admins only read it).
 */

const tier = browserTier();
if (!tier.run) console.warn(tier.notice);

describe.skipIf(!tier.run)('the account page: key policy and approvals', () => {
  const b = accountBrowser(tier);
  const { errors } = b;
  const signIn = (session: string) => b.signIn(session);

  it('shows admins the pending keys with a count badge, approves and denies them, and lets only owners save the policy', async () => {
    const owner = await b.t.seed.world('owner');
    const admin = await b.t.seed.colleague(owner.orgId, 'admin');
    const member = await b.t.seed.colleague(owner.orgId, 'member');
    const put = await b.t.api.request('PUT', `/orgs/${owner.orgId}/key-policy`, {
      token: owner.session,
      body: { approval_required_for: ['decisions:write'] },
    });
    expect(put.status).toBe(200);
    const mint = async (name: string) => {
      const res = await b.t.api.post('/api-keys', member.session, {
        org_id: owner.orgId,
        name,
        scopes: ['decisions:write'],
      });
      expect(res.body.status).toBe('pending');
      return res.body;
    };
    const ci = await mint('ci deploy');
    const laptop = await mint('laptop script');

    // The admin: two keys wait (the count shows on the menu entry); the policy is shown but cannot be changed.
    const page = await signIn(admin.session);
    await poll(() => page.locator('#approvals-count').textContent()).toBe('2');
    await poll(() => page.locator('#approvals-count').isVisible()).toBe(true);
    await openSection(page, 'policy');
    await poll(() => page.locator('#policy-approve-decisions-write').isChecked()).toBe(true);
    await poll(() => page.locator('#policy-save').isDisabled()).toBe(true);
    await poll(() => page.locator('#policy-note').isVisible()).toBe(true);
    // The ranges are the service's own (its OpenAPI document), shown beside the fields.
    expect(await page.getByLabel(/^Maximum key lifetime/).getAttribute('max')).toBe('366');
    expect(await page.locator('label[for="policy-stale"]').textContent()).toBe(
      'Revoke keys unused for (days, 30–730; empty: never)',
    );
    await expectAccessible(page, 'key policy');

    await openSection(page, 'approvals');
    expect(new URL(page.url()).hash).toBe('#approvals');
    await expectAccessible(page, 'key policy');
    await page.getByRole('button', { name: /^Approve ci deploy/ }).click();
    await poll(() => page.locator('#approvals-count').textContent()).toBe('1');
    expect((await b.t.api.get('/me', ci.key)).status).toBe(200);
    await page.getByRole('button', { name: /^Deny laptop script/ }).click();
    await poll(() => page.locator('#approvals-count').isVisible()).toBe(false);
    await poll(() => page.locator('#approvals-list').textContent()).toContain('No keys are waiting for approval.');
    expect((await b.t.api.get('/me', laptop.key)).status).toBe(401);
    await poll(() => page.locator(`[data-org-key-id="${laptop.id}"]`).textContent()).toContain('Denied');

    // The owner sets a lifetime limit through the form; the service holds it.
    const ownerPage = await signIn(owner.session);
    await openSection(ownerPage, 'policy');
    await poll(() => ownerPage.locator('#policy-save').isEnabled()).toBe(true);
    await ownerPage.locator('#policy-lifetime').fill('90');
    await ownerPage.locator('#policy-require-expiry').check();
    await ownerPage.locator('#policy-save').click();
    await poll(() => ownerPage.locator('#policy-status').textContent()).toBe('Policy saved.');
    const saved = await b.t.api.get(`/orgs/${owner.orgId}/key-policy`, owner.session);
    expect(saved.body).toMatchObject({
      max_lifetime_days: 90,
      require_expiry: true,
      approval_required_for: ['decisions:write'],
    });

    // A value the service refuses is shown, not saved.
    await ownerPage.locator('#policy-lifetime').fill('400');
    await ownerPage.locator('#policy-save').click();
    await poll(() => ownerPage.locator('#policy-error').textContent()).toContain('max_lifetime_days');
    expect((await b.t.api.get(`/orgs/${owner.orgId}/key-policy`, owner.session)).body.max_lifetime_days).toBe(90);
    await expectAccessible(ownerPage, 'policy field error');
    expect(errors).toEqual([]);
  });
});
