/// <reference lib="dom" />
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UsageService } from '../../src/usage/usage.service.js';
import { browserTier } from '../support/chromium.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

/**
 * The account page in a real browser (Debian's Chromium driven by playwright-core) against the
 * real app on real PostgreSQL. Screenshots of each step land in test-artifacts/account-page/.
 */

/** The page is asynchronous; on a loaded CI machine a second is not always enough. */
const poll = <T>(fn: () => T | Promise<T>) => expect.poll(fn, { timeout: 10_000, interval: 50 });

const ARTIFACTS = resolve(import.meta.dirname, '..', '..', 'test-artifacts', 'account-page');

/** Debian's Chromium on the PATH, or CHROMIUM_PATH; none: skipped with a notice, or a failure under CI=true. */
const tier = browserTier();
if (!tier.run) {
  console.warn(tier.notice);
  if (tier.fail) {
    describe('the account page in a browser', () => {
      it('has a Chromium to run in (CI=true)', () => {
        expect.fail(tier.notice);
      });
    });
  }
}

interface Violations {
  console: string[];
}

declare global {
  interface Window {
    __cspViolations?: string[];
  }
}

describe.skipIf(!tier.run)('the account page in a browser', () => {
  let t: TestApp;
  let context: BrowserContext;
  let userDataDir: string;
  const violations: Violations = { console: [] };

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    t = await startTestApp();
    userDataDir = mkdtempSync(join(tmpdir(), 'account-page-chromium-'));
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: tier.run ? tier.path : undefined,
      headless: true,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
      viewport: { width: 1280, height: 900 },
      permissions: ['clipboard-read', 'clipboard-write'],
    });
    // Fail with the step that hung instead of the test's overall timeout.
    context.setDefaultTimeout(10_000);
    // Runs outside the page's CSP (injected by the driver), so it can record every violation.
    await context.addInitScript(() => {
      window.__cspViolations = [];
      document.addEventListener('securitypolicyviolation', (e) => {
        window.__cspViolations!.push(`${e.violatedDirective} ${e.blockedURI}`);
      });
    });
  });

  afterAll(async () => {
    await context?.close();
    if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
    await t?.close();
  });

  async function openPage(viewport?: { width: number; height: number }): Promise<Page> {
    violations.console = [];
    const page = await context.newPage();
    if (viewport) await page.setViewportSize(viewport);
    page.on('console', (msg) => {
      // API refusals (4xx) are logged by the browser as failed loads; those are expected here.
      const text = msg.text();
      if (/Content Security Policy|Trusted Type/i.test(text) || (msg.type() === 'error' && !text.startsWith('Failed to load resource'))) violations.console.push(text);
    });
    page.on('pageerror', (err) => violations.console.push(`pageerror: ${err.message}`));
    return page;
  }

  async function expectNoViolations(page: Page): Promise<void> {
    const inPage = await page.evaluate(() => window.__cspViolations ?? []);
    expect(inPage).toEqual([]);
    expect(violations.console).toEqual([]);
  }

  async function signIn(page: Page, token: string): Promise<void> {
    await page.goto(`${t.url}/account`);
    await page.getByLabel('Session token', { exact: true }).fill(token);
    await page.getByRole('button', { name: 'Continue' }).click();
  }

  const shot = (page: Page, name: string) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });

  it('serves the page and its assets itself, under a strict Content-Security-Policy', async () => {
    const page = await t.api.get('/account');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const csp = page.headers.get('content-security-policy') ?? '';
    for (const directive of ["default-src 'self'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'", "object-src 'none'"]) {
      expect(csp).toContain(directive);
    }
    expect(csp).not.toContain('unsafe-inline');
    expect(page.headers.get('x-frame-options')).toBe('DENY');

    for (const [path, type] of [
      ['/account/assets/account.js', /^text\/javascript/],
      ['/account/assets/account.css', /^text\/css/],
      ['/account/assets/favicon.svg', /^image\/svg\+xml/],
    ] as const) {
      const asset = await t.api.get(path);
      expect(asset.status, path).toBe(200);
      expect(asset.headers.get('content-type')).toMatch(type);
      expect(asset.headers.get('content-security-policy')).toBe(csp);
      const again = await t.api.get(path, undefined, { 'if-none-match': asset.headers.get('etag')! });
      expect(again.status, `${path} revalidated`).toBe(304);
    }
  });

  it('signs in with a session token, mints with a one-time reveal, lists the key masked, shows its last use, and revokes it', async () => {
    const w = await t.seed.world('owner', 'free');
    await t.app.get(UsageService).charge(w.orgId, 'asks', 7);
    await t.app.get(UsageService).charge(w.orgId, 'retrieves', 3);
    await t.app.get(UsageService).charge(w.orgId, 'imports', 9);
    const page = await openPage();

    await page.goto(`${t.url}/account`);
    await poll(() => page.getByLabel('Session token', { exact: true }).isVisible()).toBe(true);
    await shot(page, '01-sign-in');
    await page.getByLabel('Session token', { exact: true }).fill(w.session);
    await page.getByLabel('Session token', { exact: true }).press('Enter');

    // Who you are, and today's usage.
    await poll(() => page.locator('#identity-email').textContent()).toBe(w.email);
    expect(await page.locator('#identity-org').textContent()).toBe(w.orgId);
    expect(await page.locator('#identity-members').textContent()).toBe('· 1 member');
    expect(await page.locator('#identity-role').textContent()).toBe('owner');
    expect(await page.evaluate(() => sessionStorage.getItem('svc_session'))).toBe(w.session);
    await poll(() => page.locator('#usage-plan').textContent()).toBe('Free plan');
    expect(await page.locator('[data-meter="queries"] .meter-value').textContent()).toBe('10 / 100');
    expect(await page.locator('[data-meter="queries"] .hint').textContent()).toBe('Asks 7 · Retrieves 3');
    expect(await page.locator('[data-meter="imports"] progress').getAttribute('value')).toBe('9');
    expect(await page.locator('[data-meter="imports"]').getAttribute('class')).toContain('high');
    expect(await page.locator('#usage-reset').textContent()).toMatch(/^Daily limits reset in (\d+ h )?\d+ min \(00:00 UTC\)\.$|less than a minute/);
    expect(await page.locator('#keys-empty').isVisible()).toBe(true);
    await shot(page, '02-signed-in');

    // Create, keyboard only: type a name, tick write, pick an expiry, Enter submits.
    await page.getByLabel('Name', { exact: true }).focus();
    await page.keyboard.type('CI pipeline');
    expect(await page.locator('#key-name-count').textContent()).toBe('11 / 100');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Space');
    expect(await page.locator('#scope-write').isChecked()).toBe(true);
    await page.getByLabel('Expires').selectOption('30');
    await page.getByLabel('Name', { exact: true }).press('Enter');

    // The one-time reveal: focus inside the dialog, key in full, copy with feedback.
    const dialog = page.locator('#reveal-dialog');
    await poll(() => dialog.evaluate((d: HTMLDialogElement) => d.open)).toBe(true);
    const key = await page.locator('#reveal-key').inputValue();
    expect(key).toMatch(/^svc_live_[0-9A-Za-z]{12}_[0-9A-Za-z]+$/);
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('reveal-copy');
    expect(await dialog.textContent()).toContain('only time the key is shown');
    expect(await page.locator('#reveal-summary').textContent()).toBe('CI pipeline · decisions:read, decisions:write · expires in 30 days');
    await page.keyboard.press('Enter');
    await poll(() => page.locator('#reveal-copy').textContent()).toBe('Copied');
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(key);
    await shot(page, '03-reveal-copied');

    // Closing forgets the key: not in the DOM, not in any field; focus lands on the new row.
    await page.getByRole('button', { name: 'Done' }).click();
    expect(await dialog.evaluate((d: HTMLDialogElement) => d.open)).toBe(false);
    expect(await page.evaluate((k) => document.documentElement.outerHTML.includes(k), key)).toBe(false);
    expect(await page.evaluate((k) => [...document.querySelectorAll('input, textarea')].some((i) => (i as HTMLInputElement).value.includes(k)), key)).toBe(false);
    const row = page.locator('#keys-body tr').first();
    expect(await page.evaluate(() => document.activeElement?.closest('tr')?.getAttribute('data-status'))).toBe('active');

    const lookup = key.slice('svc_live_'.length, 'svc_live_'.length + 12);
    expect(await row.locator('.masked-key').textContent()).toBe(`svc_live_${lookup}…${key.slice(-4)}`);
    expect(await row.locator('th').textContent()).toBe('CI pipeline');
    expect(await row.locator('.badge.scope').allTextContents()).toEqual(['decisions:read', 'decisions:write']);
    expect(await row.locator('.cell-expires time').textContent()).toBe('in 30 days');
    expect(await row.locator('.cell-created time').getAttribute('title')).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);
    expect(await row.locator('.cell-last-used').textContent()).toBe('Never');
    expect(await row.getAttribute('data-status')).toBe('active');
    expect(await page.locator('#key-name').inputValue()).toBe('');
    await shot(page, '04-listed');

    // The key works, and after a reload its last use shows (the session survives the reload).
    const me = await t.api.get('/me', key);
    expect(me.status).toBe(200);
    expect(me.body.org_id).toBe(w.orgId);
    await poll(async () => (await t.api.get('/api-keys', w.session)).body.keys[0].last_used_at).toBeTruthy();
    await page.reload();
    await poll(() => row.locator('.cell-last-used').textContent()).toBe('just now');
    expect(await row.locator('.cell-last-used time').getAttribute('title')).toMatch(/UTC$/);
    await shot(page, '05-last-used');

    // Revoke: Escape cancels and gives focus back; confirming revokes and the key stops working.
    await row.getByRole('button', { name: 'Revoke CI pipeline' }).focus();
    await page.keyboard.press('Enter');
    const revoke = page.locator('#revoke-dialog');
    await poll(() => revoke.evaluate((d: HTMLDialogElement) => d.open)).toBe(true);
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('revoke-cancel');
    expect(await revoke.textContent()).toContain(`svc_live_${lookup}…`);
    await page.keyboard.press('Escape');
    expect(await revoke.evaluate((d: HTMLDialogElement) => d.open)).toBe(false);
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Revoke');
    await page.keyboard.press('Enter');
    await poll(() => revoke.evaluate((d: HTMLDialogElement) => d.open)).toBe(true);
    await shot(page, '06-revoke-dialog');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await poll(() => row.getAttribute('data-status')).toBe('revoked');
    expect(await row.getAttribute('class')).toContain('muted-row');
    expect(await row.getByRole('button', { name: /Revoke/ }).count()).toBe(0);
    expect(await row.locator('.badge.status').getAttribute('title')).toMatch(/^Revoked \d{4}-/);
    expect((await t.api.get('/me', key)).status).toBe(401);
    await shot(page, '07-revoked');

    // Sign out forgets the session.
    await page.getByRole('button', { name: 'Sign out' }).click();
    expect(await page.evaluate(() => sessionStorage.getItem('svc_session'))).toBeNull();
    expect(await page.getByLabel('Session token', { exact: true }).isVisible()).toBe(true);
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('signin-token');
    await expectNoViolations(page);
    await page.close();
  });

  it('shows a viewer that write is out of reach and why, and puts server refusals beside the field', async () => {
    const w = await t.seed.world('viewer');
    const page = await openPage();
    // A host product hands the session over through sessionStorage.
    await page.goto(`${t.url}/account`);
    await page.evaluate((s) => sessionStorage.setItem('svc_session', s), w.session);
    await page.reload();

    await poll(() => page.locator('#identity-role').textContent()).toBe('viewer');
    const write = page.locator('#scope-write');
    expect(await write.isDisabled()).toBe(true);
    const reason = page.locator('#scope-write-reason');
    expect(await reason.isVisible()).toBe(true);
    expect(await reason.textContent()).toMatch(/Your role \(viewer\).*read-only keys/);
    expect(await write.getAttribute('aria-describedby')).toBe('scope-write-reason');
    await shot(page, '08-viewer');

    // Forced past the form, the server's 403 appears in place.
    await write.evaluate((box: HTMLInputElement) => {
      box.disabled = false;
      box.checked = true;
    });
    await page.getByRole('button', { name: 'Create key' }).click();
    await poll(() => page.locator('#create-error').textContent()).toMatch(/^Not allowed\. Your role "viewer" in this organisation cannot grant decisions:write/);
    expect(await page.locator('#create-error').getAttribute('data-status')).toBe('403');

    // A 400 shows beside its field, with the server's message.
    await page.locator('#key-name').evaluate((input: HTMLInputElement) => input.removeAttribute('maxlength'));
    await page.locator('#key-name').fill('x'.repeat(101));
    expect(await page.locator('#key-name-count').textContent()).toBe('101 / 100');
    await page.locator('#key-name').evaluate((input: HTMLInputElement) => input.form!.requestSubmit());
    await poll(() => page.locator('#key-name-error').textContent()).toBe('name must be at most 100 characters');
    expect(await page.locator('#key-name-error').isVisible()).toBe(true);
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('key-name');
    expect(await page.locator('#key-name').getAttribute('aria-invalid')).toBe('true');
    await shot(page, '09-field-error');
    await expectNoViolations(page);
    await page.close();
  });

  it('tells a user with no workspace to connect a repository first', async () => {
    const orgId = await t.seed.org();
    const user = await t.seed.user();
    await t.seed.member(orgId, user.id, 'member');
    const page = await openPage();
    await signIn(page, t.seed.session(user.id, user.email));

    await poll(() => page.locator('#identity-role').textContent()).toBe('member');
    await page.getByLabel('Name', { exact: true }).fill('first');
    await page.getByRole('button', { name: 'Create key' }).click();
    const error = page.locator('#create-error');
    await poll(() => error.getAttribute('data-status')).toBe('409');
    expect(await error.textContent()).toBe(
      'Connect a repository to this organisation first. You have no workspace in this organisation yet: connect a repository first',
    );
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('create-error');
    expect(await page.locator('#reveal-dialog').evaluate((d: HTMLDialogElement) => d.open)).toBe(false);
    await shot(page, '10-no-workspace');
    await expectNoViolations(page);
    await page.close();
  });

  it('sends a refused token back to the form, and lets a member of several orgs choose one (X-Org-Id)', async () => {
    const page = await openPage();
    await signIn(page, 'not-a-valid-token');
    await poll(() => page.locator('#signin-error').textContent()).toMatch(/not accepted/);
    expect(await page.evaluate(() => sessionStorage.getItem('svc_session'))).toBeNull();
    expect(await page.getByLabel('Session token', { exact: true }).isVisible()).toBe(true);

    const a = await t.seed.world('admin', 'pro');
    const b = await t.seed.org('free');
    await t.seed.member(b, a.userId, 'viewer');
    // An expired key in org A, minted 40 days ago for 30 days.
    await t.db.pool.query(
      `INSERT INTO api_keys (user_id, org_id, name, lookup, last4, key_hash, scopes, created_at, expires_at)
       VALUES ($1, $2, 'old deploy key', $3, 'Zz9Q', $4, '{decisions:read}', now() - interval '40 days', now() - interval '10 days')`,
      [a.userId, a.orgId, randomBytes(6).toString('hex'), randomBytes(32)],
    );
    await page.getByLabel('Session token', { exact: true }).fill(a.session);
    await page.getByRole('button', { name: 'Continue' }).click();

    await poll(() => page.getByLabel('Organisation ID').isVisible()).toBe(true);
    // Who is signed in shows (and Sign out works) before an organisation is chosen.
    expect(await page.locator('#identity-email').textContent()).toBe(a.email);
    expect(await page.locator('#identity-org-fact').isVisible()).toBe(false);
    expect(await page.getByRole('button', { name: 'Sign out' }).isVisible()).toBe(true);
    await page.getByLabel('Organisation ID').fill('0f0e0d0c-0b0a-4908-8706-050403020100');
    await page.getByLabel('Organisation ID').press('Enter');
    await poll(() => page.locator('#org-error').textContent()).toBe('Organisation not found');
    expect(await page.evaluate(() => sessionStorage.getItem('svc_org'))).toBeNull();
    await shot(page, '11-org-not-found');
    await page.getByLabel('Organisation ID').fill(a.orgId);
    await page.getByLabel('Organisation ID').press('Enter');

    await poll(() => page.locator('#identity-org').textContent()).toBe(a.orgId);
    expect(await page.locator('#identity-role').textContent()).toBe('admin');
    await poll(() => page.locator('#usage-plan').textContent()).toBe('Pro plan');
    expect(await page.locator('[data-meter="queries"] .meter-value').textContent()).toBe('0 used · Unlimited');
    const expired = page.locator('#keys-body tr').first();
    await poll(() => expired.getAttribute('data-status')).toBe('expired');
    expect(await expired.getAttribute('class')).toContain('muted-row');
    expect(await expired.locator('.masked-key').textContent()).toMatch(/…Zz9Q$/);
    await shot(page, '12-org-chosen-expired-key');

    // Switching to the other org shows that org's role and scopes.
    await page.getByRole('button', { name: 'Switch organisation' }).click();
    await page.getByLabel('Organisation ID').fill(b);
    await page.getByLabel('Organisation ID').press('Enter');
    await poll(() => page.locator('#identity-role').textContent()).toBe('viewer');
    expect(await page.locator('#scope-write').isDisabled()).toBe(true);
    await poll(() => page.locator('#keys-empty').isVisible()).toBe(true);
    expect(await page.evaluate(() => sessionStorage.getItem('svc_org'))).toBe(b);
    await poll(() => page.locator('#usage-plan').textContent()).toBe('Free plan');
    await expectNoViolations(page);
    await page.close();
  });

  it('fits a 375 px wide screen without horizontal scrolling, reveal included', async () => {
    const w = await t.seed.world('owner', 'pro');
    for (const name of ['a'.repeat(100), 'deploy']) {
      expect((await t.api.post('/api-keys', w.session, { org_id: w.orgId, name, scopes: ['decisions:read', 'decisions:write'], expires_in_days: 7 })).status).toBe(201);
    }
    const page = await openPage({ width: 375, height: 812 });
    await signIn(page, w.session);
    await poll(() => page.locator('#keys-body tr').count()).toBe(2);
    await poll(() => page.locator('#usage-plan').isVisible()).toBe(true);

    // Nothing scrolls sideways, and no visible element pokes out past main's content edge.
    const overflow = () =>
      page.evaluate(() => {
        const main = document.querySelector('main')!;
        const edge = main.getBoundingClientRect().right - parseFloat(getComputedStyle(main).paddingRight);
        const outside = [...main.querySelectorAll('*')]
          .filter((el) => el.getClientRects().length > 0 && el.getBoundingClientRect().right > edge + 0.5)
          .map((el) => `${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ''}.${el.className}`);
        return { viewport: window.innerWidth, doc: document.documentElement.scrollWidth, main: main.scrollWidth - main.clientWidth, outside };
      });
    const narrow = await overflow();
    expect(narrow).toEqual({ viewport: 375, doc: 375, main: 0, outside: [] });
    await shot(page, '13-narrow');

    await page.getByRole('button', { name: 'Create key' }).click();
    await poll(() => page.locator('#reveal-dialog').evaluate((d: HTMLDialogElement) => d.open)).toBe(true);
    const box = await page.locator('#reveal-dialog').boundingBox();
    expect(box!.x).toBeGreaterThanOrEqual(0);
    expect(box!.x + box!.width).toBeLessThanOrEqual(375);
    // The whole key is visible (it wraps), not scrolled inside a one-line field.
    expect(await page.locator('#reveal-key').evaluate((el: HTMLTextAreaElement) => el.scrollHeight <= el.clientHeight + 1 && el.scrollWidth <= el.clientWidth)).toBe(true);
    await shot(page, '14-narrow-reveal');
    await page.keyboard.press('Escape');
    await poll(() => page.locator('#reveal-key').count()).toBe(0);
    expect(await overflow()).toEqual({ viewport: 375, doc: 375, main: 0, outside: [] });
    await expectNoViolations(page);
    await page.close();
  });

  it('says when API keys are not enabled on the deployment', async () => {
    const bare = await startTestApp({ db: t.db, env: { API_KEY_SECRET: undefined } });
    try {
      const w = await bare.seed.world('owner');
      const page = await openPage();
      await page.goto(`${bare.url}/account`);
      await page.getByLabel('Session token', { exact: true }).fill(w.session);
      await page.getByRole('button', { name: 'Continue' }).click();
      await poll(() => page.locator('#banner').getAttribute('data-status')).toBe('501');
      expect(await page.locator('#banner').textContent()).toBe(
        'API keys are not enabled on this deployment. API keys are not configured on this deployment',
      );
      expect(await page.locator('#create').isVisible()).toBe(false);
      expect(await page.locator('#keys').isVisible()).toBe(false);
      // Usage still works without keys.
      await poll(() => page.locator('#usage-plan').textContent()).toBe('Free plan');
      await shot(page, '15-keys-not-enabled');
      await expectNoViolations(page);
      await page.close();
    } finally {
      await bare.close();
    }
  });
});
