/// <reference lib="dom" />
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { ScopeUsageRecorder } from '../../src/auth/scope-usage-recorder.js';
import { VerificationOutcomeRecorder } from '../../src/auth/verification-outcome-recorder.js';
import { accountBrowser, expectAccessible, openSection, poll } from '../support/account-browser.js';
import { browserTier } from '../support/chromium.js';

/**
 * The deployment's own scopes on the account page, in a real browser against the real app with
 * API_KEY_SCOPES: the create dialog offers the registry (GET /scopes) with its descriptions; a
 * key's details show the scope it left unused and chart what its requests were decided; "Narrow to
 * what it uses" previews and narrows it.
 */
const tier = browserTier();
if (!tier.run) console.warn(tier.notice);

const REGISTRY = {
  'invoices:read': { description: 'Read invoices', roles: ['owner', 'admin', 'member', 'viewer'] },
  'invoices:write': { description: 'Create and change invoices', roles: ['owner'] },
};

describe.skipIf(!tier.run)('the account page: scopes the deployment defines, and narrowing a key', () => {
  const b = accountBrowser(tier, { env: { API_KEY_SCOPES: JSON.stringify(REGISTRY) } });
  const { errors } = b;
  const isOpen = (page: Page, id: string) => page.locator(`#${id}`).evaluate((d: HTMLDialogElement) => d.open);
  const focusedIn = (page: Page, selector: string) =>
    page.evaluate((s) => document.activeElement?.matches(s) ?? false, selector);

  it('mints a key with two registry scopes, shows the one it left unused, charts its verifications (and the org’s), and narrows it to the one it used', async () => {
    const w = await b.t.seed.world('owner');
    const page = await b.signIn(w.session);
    await poll(() => page.locator('#keys-empty').isVisible()).toBe(true);
    // The org's verifications, summed over its keys: none yet.
    await poll(() => page.locator('#org-verifications').textContent()).toContain(
      'No verifications in the last 7 days.',
    );

    // The mint form offers the registry, each scope with its description.
    await page.locator('#create-open').click();
    await poll(() => isOpen(page, 'create-dialog')).toBe(true);
    expect(await page.locator('#create-scopes label.check').allTextContents()).toEqual([
      'decisions:read Read decisions.',
      'decisions:write Write decisions.',
      'invoices:read Read invoices',
      'invoices:write Create and change invoices',
    ]);
    await page.locator('#key-name').fill('ingest');
    await page.getByRole('checkbox', { name: 'invoices:read Read invoices' }).check();
    await page.locator('#create-submit').click();
    await poll(() => isOpen(page, 'reveal-dialog')).toBe(true);
    const key = await page.locator('#reveal-key').inputValue();
    const keyId = await page.locator('#keys-body tr.key-row').getAttribute('data-key-id');
    await page.locator('#reveal-close').click();
    await page.locator('#reveal-discard').click();
    const row = page.locator(`#keys-body tr[data-key-id="${keyId}"]`);
    await poll(() => row.locator('.badge.scope').allTextContents()).toEqual(['decisions:read', 'invoices:read']);

    // The key uses one of its scopes (GET /usage requires decisions:read); the count is taken
    // before the answer and written behind it: write what is pending now.
    expect((await b.t.api.get('/usage', key)).status).toBe(200);
    await b.t.app.get(ScopeUsageRecorder).flush();
    await b.t.app.get(VerificationOutcomeRecorder).drain();

    // Its details show what it left unused; the action opens the preview, keyboard only.
    await row.getByRole('button', { name: 'Details of ingest' }).click();
    const details = page.locator(`#details-${keyId}`);
    await poll(() => details.locator('.scope-unused').textContent()).toBe('Unused for 30 days: invoices:read');
    expect(await details.locator('li[data-scope="decisions:read"]').textContent()).toMatch(
      /^decisions:read 1 request, last /,
    );

    // Its verifications: the one request, admitted, charted by outcome with a legend and a table.
    const outcomes = details.locator('.key-verifications');
    await poll(() => outcomes.locator('figcaption > span').textContent()).toBe('Last 7 days: 1 request');
    expect(await outcomes.locator('.chart-legend li').allTextContents()).toEqual(['Valid 1']);
    expect(await outcomes.locator('svg.chart rect.layer-valid').count()).toBe(1);
    expect(await outcomes.locator('table tbody tr').count()).toBe(7);
    await expectAccessible(page, 'key details with its verifications');
    await outcomes.getByRole('button', { name: '24 hours' }).focus();
    await page.keyboard.press('Enter');
    await poll(() => outcomes.locator('figcaption > span').textContent()).toBe('Last 24 hours: 1 request');
    expect(await outcomes.locator('table tbody tr').count()).toBe(24);
    expect(await outcomes.getByRole('button', { name: '24 hours' }).getAttribute('aria-pressed')).toBe('true');
    // Its colours read in the dark theme too.
    await page.locator('#theme-toggle').click();
    await poll(() => page.locator('#theme-toggle').getAttribute('aria-pressed')).toBe('true');
    await expectAccessible(page, 'key details with its verifications, dark');
    await page.locator('#theme-toggle').click();
    await details.getByRole('button', { name: 'Narrow to what it uses: ingest' }).focus();
    await page.keyboard.press('Enter');
    await poll(() => isOpen(page, 'narrow-dialog')).toBe(true);
    expect(await focusedIn(page, '#narrow-scopes input[value="decisions:read"]')).toBe(true);
    const boxes = page.locator('#narrow-scopes input');
    expect(
      await boxes.evaluateAll((els) =>
        els.map((e) => [(e as HTMLInputElement).value, (e as HTMLInputElement).checked]),
      ),
    ).toEqual([
      ['decisions:read', true],
      ['invoices:read', false],
    ]);
    expect(await page.locator('#narrow-impact [data-refused]').textContent()).toBe(
      'With these scopes, no request of the last 30 days would have been refused.',
    );
    // Unticking the used scope too: never an empty set.
    await page.keyboard.press('Space');
    await poll(() => page.locator('#narrow-empty').isVisible()).toBe(true);
    expect(await page.locator('#narrow-confirm').isDisabled()).toBe(true);
    await page.keyboard.press('Space');
    await poll(() => page.locator('#narrow-confirm').isDisabled()).toBe(false);
    await expectAccessible(page, 'narrowing preview');

    await page.locator('#narrow-confirm').click();
    await poll(() => isOpen(page, 'narrow-dialog')).toBe(false);
    await poll(() => row.locator('.badge.scope').allTextContents()).toEqual(['decisions:read']);
    expect(await focusedIn(page, `tr[data-key-id="${keyId}"] th`)).toBe(true);
    // The details read the key again: nothing is unused, so nothing is offered.
    await poll(() => details.locator('.key-scope-use').textContent()).toContain(
      'Every scope it holds was used in the last 30 days.',
    );
    // The org's summary, read again from its toggle, holds the key's request.
    await openSection(page, 'org-keys');
    const org = page.locator('#org-verifications');
    await org.getByRole('button', { name: '7 days' }).click();
    await poll(() => org.locator('figcaption > span').textContent()).toBe('Last 7 days: 1 request');
    expect(await org.locator('table caption').textContent()).toBe(
      'Requests with every key of the organisation per day by outcome, last 7 days',
    );
    await expectAccessible(page, 'the org’s verifications');
    expect((await b.t.api.get('/me', key)).body.scopes).toEqual(['decisions:read']);
    expect(errors).toEqual([]);
    await page.close();
  });
});
