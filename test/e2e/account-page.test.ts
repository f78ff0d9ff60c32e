/// <reference lib="dom" />
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UsageService } from '../../src/usage/usage.service.js';
import { expectAccessible, openSection, poll } from '../support/account-browser.js';
import { browserTier } from '../support/chromium.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { insertKeyRows, testPrincipal } from '../support/factories.js';

/**
 * The account page in a real browser (Debian's Chromium driven by playwright-core) against the
 * real app on real PostgreSQL, keyboard only. One browser and one app for the whole file (the
 * viewport × theme matrix is pages in the same context), except where a test would leave state in
 * the browser: the clock test (Playwright's clock is the context's) and the test with its own app
 * (the browser's sockets to it must close before it does) each launch their own. Screenshots of each step land in
 * test-artifacts/account-page/; with SCREENSHOTS=1 (`npm run screenshots`) the main states are
 * also written to docs/screenshots/ for the README.
 *
 * axe-core checks every state. Its source is evaluated through the DevTools protocol
 * (page.evaluate), which the page's CSP does not govern: an injected <script> tag
 * (addScriptTag) would be refused by `script-src 'self'` and Trusted Types, and we keep the
 * policy exactly as served rather than loosen it for the test.
 */

const ROOT = resolve(import.meta.dirname, '..', '..');
const ARTIFACTS = join(ROOT, 'test-artifacts', 'account-page');
const DOCS_SHOTS = process.env.SCREENSHOTS === '1' ? join(ROOT, 'docs', 'screenshots') : null;

const VIEWPORTS = [
  { width: 320, height: 720 },
  { width: 768, height: 900 },
  { width: 1440, height: 900 },
] as const;
const THEMES = ['light', 'dark'] as const;

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

declare global {
  interface Window {
    __cspViolations?: string[];
    __requests?: string[];
  }
}

describe.skipIf(!tier.run)('the account page in a browser', () => {
  let t: TestApp;
  let context: BrowserContext;
  const consoleErrors = new Map<Page, string[]>();
  /** Requests to anything but an app the test started (t, or the 501 test's own app), from any page. */
  const foreign: string[] = [];
  const ownOrigins = new Set<string>();
  /** Every browser launched here, with its profile directory: closed and removed in afterAll. */
  const launched: { context: BrowserContext; userDataDir: string }[] = [];

  /** A Chromium with its own profile, wired to record CSP violations and requests to other origins. */
  async function launchContext(): Promise<BrowserContext> {
    const userDataDir = mkdtempSync(join(tmpdir(), 'account-page-chromium-'));
    const ctx = await chromium.launchPersistentContext(userDataDir, {
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
      viewport: { width: 1440, height: 900 },
      permissions: ['clipboard-read', 'clipboard-write'],
    });
    launched.push({ context: ctx, userDataDir });
    // Fail with the step that hung instead of the test's overall timeout.
    ctx.setDefaultTimeout(10_000);
    ctx.on('request', (req) => {
      if (!ownOrigins.has(new URL(req.url()).origin)) foreign.push(req.url());
    });
    // Runs outside the page's CSP (injected by the driver), so it can record every violation.
    await ctx.addInitScript(() => {
      window.__cspViolations = [];
      document.addEventListener('securitypolicyviolation', (e) => {
        window.__cspViolations!.push(`${e.violatedDirective} ${e.blockedURI}`);
      });
    });
    return ctx;
  }

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    if (DOCS_SHOTS) mkdirSync(DOCS_SHOTS, { recursive: true });
    t = await startTestApp();
    ownOrigins.add(new URL(t.url).origin);
    context = await launchContext();
  });

  afterAll(async () => {
    for (const { context: ctx, userDataDir } of launched) {
      await ctx.close();
      rmSync(userDataDir, { recursive: true, force: true });
    }
    await t?.close();
  });

  async function openPage(
    options: { viewport?: { width: number; height: number }; theme?: 'light' | 'dark'; in?: BrowserContext } = {},
  ): Promise<Page> {
    const page = await (options.in ?? context).newPage();
    const errors: string[] = [];
    consoleErrors.set(page, errors);
    await page.setViewportSize(options.viewport ?? { width: 1440, height: 900 });
    await page.emulateMedia({ colorScheme: options.theme ?? 'light' });
    page.on('console', (msg) => {
      // API refusals (4xx) are logged by the browser as failed loads; those are expected here.
      const text = msg.text();
      if (
        /Content Security Policy|Trusted Type/i.test(text) ||
        (msg.type() === 'error' && !text.startsWith('Failed to load resource'))
      )
        errors.push(text);
    });
    page.on('pageerror', (err) => errors.push(`pageerror: ${err.message}`));
    return page;
  }

  async function expectClean(page: Page): Promise<void> {
    expect(await page.evaluate(() => window.__cspViolations ?? [])).toEqual([]);
    expect(consoleErrors.get(page)).toEqual([]);
    expect(foreign).toEqual([]);
  }

  const isOpen = (page: Page, id: string) => page.locator(`#${id}`).evaluate((d: HTMLDialogElement) => d.open);
  const focusedId = (page: Page) => page.evaluate(() => document.activeElement?.id ?? '');
  const announced = (page: Page) =>
    page.evaluate(
      () =>
        `${document.getElementById('announcer')!.textContent}|${document.getElementById('announcer-alert')!.textContent}`,
    );

  async function signIn(page: Page, token: string, query = ''): Promise<void> {
    await page.goto(`${t.url}/account${query}`);
    await page.getByLabel('Session token', { exact: true }).focus();
    await page.keyboard.insertText(token);
    await page.keyboard.press('Enter');
  }

  /** Presses Tab until the element is focused (at most `max` times): the keyboard way to reach it. */
  async function tabTo(page: Page, selector: string, max = 40): Promise<void> {
    for (let i = 0; i < max; i++) {
      if (await page.evaluate((s) => document.activeElement?.matches(s) ?? false, selector)) return;
      await page.keyboard.press('Tab');
    }
    throw new Error(`Tab never reached ${selector}`);
  }

  /** `docs`: also written for the README (true: the open dialog or the top of the page; a selector: that element). */
  const shot = async (page: Page, name: string, docs: boolean | string = false) => {
    await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
    if (!docs || !DOCS_SHOTS) return;
    // Small files for the README: an open dialog on its own, else the top of the viewport.
    const path = join(DOCS_SHOTS, `${name.replace(/^\d+-/, '')}.png`);
    const dialog = page.locator('dialog[open]');
    if (typeof docs === 'string') await page.locator(docs).screenshot({ path });
    else if ((await dialog.count()) > 0) await dialog.screenshot({ path });
    else
      await page.screenshot({
        path,
        clip: { x: 0, y: 0, width: page.viewportSize()!.width, height: Math.min(720, page.viewportSize()!.height) },
      });
  };

  /** Keys in every state, straight into the table: active, expiring in 3 days, expired, revoked, and a long name. */
  async function seedKeys(userId: string, orgId: string): Promise<void> {
    const days = (n: number) => new Date(Date.now() + n * 86_400_000);
    const rows: [string, Date, Date | null, Date | null][] = [
      ['production deploy', days(-3), days(90), null],
      ['nightly export job', days(-20), days(3), null],
      ['old laptop', days(-40), days(-10), null],
      ['leaked in a gist', days(-50), null, days(-2)],
      ['a key with a rather long descriptive name for the reporting warehouse', days(-1), null, null],
    ];
    await insertKeyRows(
      t.db.pool,
      rows.map(([name, createdAt, expiresAt, revokedAt]) => ({
        userId,
        orgId,
        name,
        last4: 'Zz9Q',
        createdAt,
        expiresAt,
        revokedAt,
      })),
    );
  }

  it('serves the page and its assets itself, under a strict Content-Security-Policy', async () => {
    const page = await t.api.get('/account');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const csp = page.headers.get('content-security-policy') ?? '';
    for (const directive of [
      "default-src 'self'",
      "script-src 'self'",
      "style-src 'self'",
      "connect-src 'self'",
      "frame-ancestors 'none'",
      "object-src 'none'",
    ]) {
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

  it('keys first: creates a key in a dialog, reveals it once, lists it, shows its details and revokes it by name, all by keyboard', async () => {
    const w = await t.seed.world('owner', 'free');
    await t.app.get(UsageService).charge(w.orgId, 'asks', 7);
    await t.app.get(UsageService).charge(w.orgId, 'retrieves', 3);
    const page = await openPage();

    await page.goto(`${t.url}/account`);
    await poll(() => page.getByLabel('Session token', { exact: true }).isVisible()).toBe(true);
    expect(await focusedId(page)).toBe('signin-token');
    await expectAccessible(page, 'sign in');
    await shot(page, '01-sign-in');
    await page.keyboard.insertText(w.session);
    await page.keyboard.press('Enter');

    // One org: straight to its keys. The empty state says what to do next.
    await poll(() => page.locator('#identity-email').textContent()).toBe(w.email);
    expect(await page.locator('#identity-role').textContent()).toBe('owner');
    expect(await page.evaluate(() => sessionStorage.getItem('svc_session'))).toBe(w.session);
    await poll(() => page.locator('#keys-empty').isVisible()).toBe(true);
    expect(await page.locator('#keys-empty').textContent()).toContain('Create your first key');
    await poll(() => page.locator('#usage-plan').textContent()).toBe('Free plan');
    expect(await page.locator('[data-meter="queries"] .meter-value').textContent()).toBe('10 / 100');
    await poll(() => page.locator('[data-meter="queries"] figcaption').textContent()).toBe('Last 30 days: 10 in total');
    expect(await page.locator('[data-meter="imports"] figcaption').textContent()).toBe('Last 30 days: 0 in total');
    expect(await page.locator('#identity-org-name').textContent()).toBe('Org');
    expect(await page.locator('#org-switcher').isVisible()).toBe(false);
    // The keys come before usage in the document: they are the page's first content.
    expect(
      await page.evaluate(
        () =>
          document.getElementById('keys')!.compareDocumentPosition(document.getElementById('usage')!) &
          Node.DOCUMENT_POSITION_FOLLOWING,
      ),
    ).toBeTruthy();
    await expectAccessible(page, 'empty');
    await shot(page, '02-empty');

    // "Create key" opens the dialog with focus in it; Tab stays inside; Escape gives focus back.
    await tabTo(page, '#create-open');
    await page.keyboard.press('Enter');
    await poll(() => isOpen(page, 'create-dialog')).toBe(true);
    expect(await focusedId(page)).toBe('key-name');
    for (let i = 0; i < 12; i++) {
      await page.keyboard.press('Tab');
      expect(await page.evaluate(() => Boolean(document.activeElement?.closest('#create-dialog')))).toBe(true);
    }
    await page.keyboard.press('Shift+Tab');
    expect(await page.evaluate(() => Boolean(document.activeElement?.closest('#create-dialog')))).toBe(true);
    await expectAccessible(page, 'create dialog');
    await page.keyboard.press('Escape');
    expect(await isOpen(page, 'create-dialog')).toBe(false);
    expect(await focusedId(page)).toBe('create-open');

    // Create, keyboard only: type a name, tick write, pick an expiry, Enter submits.
    await page.keyboard.press('Enter');
    await poll(() => focusedId(page)).toBe('key-name');
    await page.keyboard.type('CI pipeline');
    expect(await page.locator('#key-name-count').textContent()).toBe('11 / 100');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Space');
    expect(await page.locator('#scope-decisions-write').isChecked()).toBe(true);
    await page.keyboard.press('Tab');
    expect(await focusedId(page)).toBe('key-expiry');
    await page.getByLabel('Expires').selectOption('30');
    await page.getByLabel('Name', { exact: true }).press('Enter');

    // The one-time reveal: focus inside the dialog, key in full, copy with feedback, announced.
    await poll(() => isOpen(page, 'reveal-dialog')).toBe(true);
    const key = await page.locator('#reveal-key').inputValue();
    expect(key).toMatch(/^svc_live_[0-9A-Za-z]{12}_[0-9A-Za-z]+$/);
    expect(await focusedId(page)).toBe('reveal-copy');
    expect(await page.locator('#reveal-dialog').textContent()).toContain('only time the key is shown');
    expect(await page.locator('#reveal-summary').textContent()).toBe(
      'CI pipeline · decisions:read, decisions:write · expires in 30 days',
    );
    await poll(() => announced(page)).toMatch(/^Key CI pipeline created\. Copy it now/);
    await expectAccessible(page, 'reveal');
    await shot(page, '03-reveal', true);
    await page.keyboard.press('Enter');
    await poll(() => page.locator('#reveal-copy').textContent()).toBe('Copied');
    expect(await page.locator('#reveal-copied').textContent()).toBe('The key is on your clipboard.');
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(key);

    // Copied, so Done closes at once and forgets the key: not in the DOM, any field, the URL or storage.
    await tabTo(page, '#reveal-close');
    await page.keyboard.press('Enter');
    expect(await isOpen(page, 'reveal-dialog')).toBe(false);
    expect(await page.evaluate((k) => document.documentElement.outerHTML.includes(k), key)).toBe(false);
    expect(
      await page.evaluate(
        (k) => [...document.querySelectorAll('input, textarea')].some((i) => (i as HTMLInputElement).value.includes(k)),
        key,
      ),
    ).toBe(false);
    expect(page.url()).not.toContain(key.slice(9, 21));
    expect(
      await page.evaluate(
        (k) => JSON.stringify({ ...sessionStorage }).includes(k) || JSON.stringify({ ...localStorage }).includes(k),
        key,
      ),
    ).toBe(false);
    const row = page.locator('#keys-body tr.key-row').first();
    expect(await page.evaluate(() => document.activeElement?.closest('tr')?.getAttribute('data-status'))).toBe(
      'active',
    );

    const lookup = key.slice('svc_live_'.length, 'svc_live_'.length + 12);
    expect(await row.locator('.masked-key').textContent()).toBe(`svc_live_${lookup}…${key.slice(-4)}`);
    expect(await row.locator('th').textContent()).toBe('CI pipeline');
    expect(await row.locator('.badge.scope').allTextContents()).toEqual(['decisions:read', 'decisions:write']);
    expect(await row.locator('.badge.status').textContent()).toBe('Expires in 30 days');
    expect(await row.locator('.badge.status').getAttribute('class')).toContain('active');
    expect(await row.locator('.cell-created time').getAttribute('title')).toMatch(
      /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/,
    );
    expect(await row.locator('.cell-last-used').textContent()).toBe('Never');

    // The key works, and after a reload its last use shows (the session survives the reload).
    expect((await t.api.get('/me', key)).status).toBe(200);
    await poll(async () => (await t.api.get('/api-keys', w.session)).body.keys[0].last_used_at).toBeTruthy();
    await page.reload();
    await poll(() => row.locator('.cell-last-used').textContent()).toBe('just now');
    await shot(page, '04-listed');

    // Details: the key's facts and its usage of the last 30 days, charted with a table for screen readers.
    const keyId = (await row.getAttribute('data-key-id'))!;
    await t.app
      .get(UsageService)
      .charge(
        w.orgId,
        'asks',
        5,
        testPrincipal({ userId: w.userId, email: w.email, orgId: w.orgId, orgRole: 'owner', keyId }),
      );
    await row.getByRole('button', { name: 'Details of CI pipeline' }).focus();
    await page.keyboard.press('Enter');
    const details = page.locator('tr.details-row').first();
    await poll(() => details.isVisible()).toBe(true);
    expect(await row.getByRole('button', { name: 'Details of CI pipeline' }).getAttribute('aria-expanded')).toBe(
      'true',
    );
    await poll(() => details.locator('.key-usage figcaption').textContent()).toBe('Last 30 days: 5 in total');
    expect(await details.locator('.key-usage table caption').textContent()).toMatch(
      /^Units charged with CI pipeline per day/,
    );
    expect(await details.locator('.key-usage table tbody tr').count()).toBe(30);
    expect(await details.locator('.key-usage table tbody tr').last().locator('td').textContent()).toBe('5');
    expect(await details.locator('.key-usage svg rect').count()).toBe(30);
    expect(await details.locator('.facts').textContent()).toContain(keyId);
    await expectAccessible(page, 'details');
    await shot(page, '05-details', true);
    await page.keyboard.press('Enter');
    await poll(() => details.isVisible()).toBe(false);

    // Revoke: the name must be typed; Escape cancels and gives focus back.
    await row.getByRole('button', { name: 'Revoke CI pipeline' }).focus();
    await page.keyboard.press('Enter');
    await poll(() => isOpen(page, 'revoke-dialog')).toBe(true);
    expect(await focusedId(page)).toBe('revoke-name');
    expect(await page.locator('#revoke-dialog').textContent()).toContain(`svc_live_${lookup}…`);
    expect(await page.locator('#revoke-confirm').isDisabled()).toBe(true);
    await page.keyboard.press('Escape');
    expect(await isOpen(page, 'revoke-dialog')).toBe(false);
    expect(await page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe('Revoke CI pipeline');
    await page.keyboard.press('Enter');
    await poll(() => isOpen(page, 'revoke-dialog')).toBe(true);
    await page.keyboard.type('CI pipelin');
    await page.keyboard.press('Enter');
    expect(await isOpen(page, 'revoke-dialog')).toBe(true);
    await page.keyboard.type('e');
    expect(await page.locator('#revoke-confirm').isDisabled()).toBe(false);
    await expectAccessible(page, 'revoke dialog');
    await shot(page, '06-revoke-dialog', true);
    await page.keyboard.press('Enter');

    // The revoked key moves under "Show 1 inactive key", opened so focus can land on it.
    const revoked = page.locator(`#keys-inactive tr[data-status="revoked"]`);
    await poll(() => revoked.count()).toBe(1);
    await poll(() => announced(page)).toMatch(/^Key CI pipeline revoked/);
    expect(await page.evaluate(() => document.activeElement?.closest('tr')?.getAttribute('data-status'))).toBe(
      'revoked',
    );
    expect(await revoked.locator('.badge.status').textContent()).toBe('Revoked');
    expect(await revoked.getByRole('button', { name: /Revoke/ }).count()).toBe(0);
    expect(await page.locator('#inactive-toggle').textContent()).toBe('Hide 1 inactive key');
    expect((await t.api.get('/me', key)).status).toBe(401);
    await expectAccessible(page, 'revoked');

    // Sign out forgets the session.
    await page.getByRole('button', { name: 'Sign out' }).focus();
    await page.keyboard.press('Enter');
    expect(await page.evaluate(() => sessionStorage.getItem('svc_session'))).toBeNull();
    expect(await focusedId(page)).toBe('signin-token');
    await expectClean(page);
    await page.close();
  });

  it('follows next_cursor with "Load more" when the list is paginated', async () => {
    const w = await t.seed.world('owner');
    for (const name of ['first', 'second', 'third'])
      expect((await t.api.post('/api-keys', w.session, { org_id: w.orgId, name })).status).toBe(201);
    const page = await openPage({ viewport: { width: 768, height: 900 } });
    // The page asks for 50 keys a page; the real server's keyset pagination (issue 14) is made to
    // answer 2 a page by rewriting `limit` on the way out, so the page follows the server's own
    // opaque next_cursor, not one made up here.
    // Recorded here and asserted below: an expect() thrown inside a route handler is an unhandled rejection.
    const sent: { limit: string | null; org: string | null; cursor: string | null; answered: string | undefined }[] =
      [];
    await page.route(
      (url) => url.pathname === '/api-keys',
      async (route) => {
        const url = new URL(route.request().url());
        const limit = url.searchParams.get('limit');
        url.searchParams.set('limit', '2');
        const real = await route.fetch({ url: url.toString() });
        const body = (await real.json()) as { next_cursor?: string };
        sent.push({
          limit,
          org: url.searchParams.get('org_id'),
          cursor: url.searchParams.get('cursor'),
          answered: body.next_cursor,
        });
        await route.fulfill({ response: real });
      },
    );
    await signIn(page, w.session);
    await poll(() => page.locator('#keys-body tr.key-row').count()).toBe(2);
    const more = page.locator('#keys-more');
    expect(await more.isVisible()).toBe(true);
    await more.focus();
    await page.keyboard.press('Enter');
    await poll(() => page.locator('#keys-body tr.key-row').count()).toBe(3);
    expect(await page.locator('#keys-body tr.key-row th').allTextContents()).toEqual(['third', 'second', 'first']);
    expect(await more.isVisible()).toBe(false);
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('first');
    // First page without a cursor; the second with exactly the cursor the server gave, which ended the list.
    expect(sent).toHaveLength(2);
    expect(sent[0]).toEqual({ limit: '50', org: w.orgId, cursor: null, answered: expect.any(String) });
    // The page is pinned to the newest API version, whose last page says null (older ones omit it).
    expect(sent[1]).toEqual({ limit: '50', org: w.orgId, cursor: sent[0]!.answered, answered: null });
    await poll(() => announced(page)).toMatch(/^1 more key loaded\./);
    await expectAccessible(page, 'load more');
    await expectClean(page);
    await page.close();
  });

  it('shows an error banner with "Try again" where a list fails, spoken, and recovers', async () => {
    const w = await t.seed.world('owner');
    const page = await openPage();
    let failures = 1;
    await page.route(
      (url) => url.pathname === '/api-keys',
      async (route) => {
        if (failures-- > 0)
          return route.fulfill({ status: 503, json: { statusCode: 503, message: 'Service temporarily unavailable' } });
        return route.continue();
      },
    );
    await signIn(page, w.session);
    const error = page.locator('#keys-error');
    await poll(() => error.isVisible()).toBe(true);
    expect(await error.textContent()).toBe(
      'Something went wrong on the server. Service temporarily unavailable Try again',
    );
    await poll(() => announced(page)).toMatch(
      /\|Something went wrong on the server\. Service temporarily unavailable$/,
    );
    expect(await page.locator('#keys-empty').isVisible()).toBe(false);
    await expectAccessible(page, 'error banner');
    await error.getByRole('button', { name: 'Try again' }).focus();
    await page.keyboard.press('Enter');
    await poll(() => page.locator('#keys-empty').isVisible()).toBe(true);
    expect(await error.isVisible()).toBe(false);
    expect(await page.evaluate(() => window.__cspViolations ?? [])).toEqual([]);
    expect(foreign).toEqual([]);
    await page.close();
  });

  it('asks before a reveal is closed without copying, and forgets the key either way', async () => {
    const w = await t.seed.world('member');
    const page = await openPage({ theme: 'dark' });
    await signIn(page, w.session);
    await poll(() => page.locator('#create-open').isVisible()).toBe(true);
    await page.locator('#create-open').focus();
    await page.keyboard.press('Enter');
    await poll(() => focusedId(page)).toBe('key-name');
    await page.keyboard.type('staging');
    await page.keyboard.press('Enter');
    await poll(() => isOpen(page, 'reveal-dialog')).toBe(true);
    const key = await page.locator('#reveal-key').inputValue();

    // Escape without copying: the dialog stays and asks; "Keep it open" goes back to Copy.
    await page.keyboard.press('Escape');
    await poll(() => page.locator('#reveal-confirm').isVisible()).toBe(true);
    expect(await isOpen(page, 'reveal-dialog')).toBe(true);
    await poll(() => focusedId(page)).toBe('reveal-keep');
    await poll(() => announced(page)).toMatch(/You have not copied the key/);
    await expectAccessible(page, 'reveal confirm (dark)');
    await shot(page, '07-reveal-confirm', true);
    await page.keyboard.press('Enter');
    await poll(() => page.locator('#reveal-confirm').isVisible()).toBe(false);
    await poll(() => focusedId(page)).toBe('reveal-copy');

    // Done without copying asks too; confirming closes and the key is gone.
    await tabTo(page, '#reveal-close');
    await page.keyboard.press('Enter');
    await poll(() => focusedId(page)).toBe('reveal-keep');
    expect(await isOpen(page, 'reveal-dialog')).toBe(true);
    await tabTo(page, '#reveal-discard');
    await page.keyboard.press('Enter');
    await poll(() => isOpen(page, 'reveal-dialog')).toBe(false);
    expect(await page.evaluate((k) => document.documentElement.outerHTML.includes(k), key)).toBe(false);
    expect(await page.locator('#reveal-key').count()).toBe(0);
    await poll(() => page.evaluate(() => document.activeElement?.closest('tr')?.querySelector('th')?.textContent)).toBe(
      'staging',
    );
    await expectClean(page);
    await page.close();
  });

  // Six layouts, each checked by axe: about 15 s alone, and past the default 30 s beside the rest of
  // npm test on a slow machine.
  it('collapses revoked and expired keys, warns of a key that expires within 7 days, and reads well at 320, 768 and 1440 px in light and dark', async () => {
    const w = await t.seed.world('admin', 'pro');
    await seedKeys(w.userId, w.orgId);
    // One tab (the session lives in its sessionStorage), resized and re-themed for each case.
    const page = await openPage();
    await signIn(page, w.session);
    for (const viewport of VIEWPORTS) {
      for (const theme of THEMES) {
        const label = `${viewport.width}-${theme}`;
        await page.setViewportSize(viewport);
        await page.emulateMedia({ colorScheme: theme });
        await page.reload();
        await poll(() => page.locator('#keys-body tr.key-row').count()).toBe(3);
        await poll(() => page.locator('#usage-plan').isVisible()).toBe(true);

        const badges = await page
          .locator('#keys-body .badge.status')
          .evaluateAll((els) => els.map((e) => `${e.textContent}:${e.classList[2]}`));
        expect(badges.sort()).toEqual(['Active:active', 'Expires in 3 days:expiring', 'Expires in 90 days:active']);
        const toggle = page.locator('#inactive-toggle');
        expect(await toggle.textContent()).toBe('Show 2 inactive keys');
        expect(await page.locator('#keys-inactive').isVisible()).toBe(false);

        // Nothing scrolls sideways, nothing pokes out, and names break only between words.
        const layout = await page.evaluate(() => {
          const main = document.querySelector('main')!;
          const edge = main.getBoundingClientRect().right - parseFloat(getComputedStyle(main).paddingRight);
          const outside = [...main.querySelectorAll('*')]
            .filter(
              (el) =>
                el.getClientRects().length > 0 &&
                !el.closest('.visually-hidden') &&
                el.getBoundingClientRect().right > edge + 0.5,
            )
            .map((el) => `${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ''}.${el.className}`);
          // A word cut in two shows as a line box narrower than the word: measure each word's line count.
          const split = [...document.querySelectorAll('#keys-body .name-text')].filter((el) => {
            const range = document.createRange();
            const words: string[] = [];
            const text = el.firstChild!;
            let start = 0;
            for (const word of (el.textContent ?? '').split(' ')) {
              range.setStart(text, start);
              range.setEnd(text, start + word.length);
              if (range.getClientRects().length > 1) words.push(word);
              start += word.length + 1;
            }
            return words.length > 0;
          });
          const width = document.documentElement.clientWidth;
          const sideways = [...document.body.querySelectorAll('*')]
            .filter(
              (el) =>
                el.getClientRects().length > 0 &&
                !el.closest('dialog:not([open])') &&
                el.getBoundingClientRect().right > width + 0.5,
            )
            .map(
              (el) =>
                `${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ''}.${el.className} ${Math.round(el.getBoundingClientRect().right)}`,
            );
          return {
            sideways: document.documentElement.scrollWidth > width ? sideways : [],
            outside,
            split: split.length,
          };
        });
        expect(layout, label).toEqual({ sideways: [], outside: [], split: 0 });
        // No layout shift worth the name while it loaded (skeletons hold the space): CLS under 0.1, "good".
        type Shift = PerformanceEntry & { value: number; hadRecentInput: boolean; sources: { node?: Node }[] };
        const shift = await page.evaluate(
          () =>
            new Promise<{ total: number; moved: string[] }>((done) => {
              let total = 0;
              const moved: string[] = [];
              new PerformanceObserver((list) => {
                for (const entry of list.getEntries() as Shift[]) {
                  if (entry.hadRecentInput) continue;
                  total += entry.value;
                  for (const source of entry.sources) {
                    const el = source.node instanceof Element ? source.node : source.node?.parentElement;
                    moved.push(`${entry.value.toFixed(3)} ${el?.tagName.toLowerCase()}#${el?.id}.${el?.className}`);
                  }
                }
              }).observe({ type: 'layout-shift', buffered: true });
              setTimeout(() => done({ total, moved }), 50);
            }),
        );
        expect(shift.total, `${label}: ${shift.moved.join(', ')}`).toBeLessThan(0.1);
        // Rows become cards on narrow screens: the header row is out of sight.
        expect(
          await page.locator('#keys-table thead').evaluate((el) => el.getBoundingClientRect().height > 1),
          label,
        ).toBe(viewport.width > 880);
        await expectAccessible(page, `keys ${label}`);
        if (viewport.width !== 768) await shot(page, `08-keys-${label}`, theme === 'light' || viewport.width === 1440);

        // Show the inactive keys (keyboard), then look again.
        await toggle.focus();
        await page.keyboard.press('Enter');
        await poll(() => page.locator('#keys-inactive tr.key-row').count()).toBe(2);
        expect(await page.locator('#keys-inactive .badge.status').allTextContents()).toEqual(['Expired', 'Revoked']);
        expect(await toggle.getAttribute('aria-expanded')).toBe('true');
        await expectAccessible(page, `inactive ${label}`);

        // The create dialog fits the screen.
        await page.locator('#create-open').focus();
        await page.keyboard.press('Enter');
        await poll(() => isOpen(page, 'create-dialog')).toBe(true);
        const box = (await page.locator('#create-dialog').boundingBox())!;
        expect(box.x).toBeGreaterThanOrEqual(0);
        expect(box.x + box.width).toBeLessThanOrEqual(viewport.width);
        await expectAccessible(page, `create ${label}`);
        await page.keyboard.press('Escape');
        await expectClean(page);
      }
    }
    await page.close();
  }, 90_000);

  it('switches light and dark from a toggle, remembered across reloads, following the system until then', async () => {
    const w = await t.seed.world('viewer');
    const page = await openPage({ theme: 'dark' });
    await signIn(page, w.session);
    await poll(() => page.locator('#keys-empty').isVisible()).toBe(true);
    const background = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    expect(await background()).toBe('rgb(13, 17, 23)');
    expect(await page.locator('#theme-toggle').getAttribute('aria-pressed')).toBe('true');
    await page.locator('#theme-toggle').focus();
    await page.keyboard.press('Enter');
    expect(await background()).toBe('rgb(246, 248, 250)');
    expect(await page.locator('#theme-toggle').getAttribute('aria-pressed')).toBe('false');
    await poll(() => announced(page)).toMatch(/Light theme on/);
    await page.reload();
    await poll(() => page.locator('#keys-empty').isVisible()).toBe(true);
    expect(await background()).toBe('rgb(246, 248, 250)');
    await page.keyboard.press('Tab');
    await tabTo(page, '#theme-toggle');
    await page.keyboard.press('Enter');
    expect(await background()).toBe('rgb(13, 17, 23)');
    await page.evaluate(() => localStorage.removeItem('svc_theme'));
    await expectClean(page);
    await page.close();
  });

  it('shows a viewer that write is out of reach and why, and puts server refusals beside the field', async () => {
    const w = await t.seed.world('viewer');
    const page = await openPage({ viewport: { width: 768, height: 900 } });
    // A host product hands the session over through sessionStorage.
    await page.goto(`${t.url}/account`);
    await page.evaluate((s) => sessionStorage.setItem('svc_session', s), w.session);
    await page.reload();

    await poll(() => page.locator('#identity-role').textContent()).toBe('viewer');
    // The button is shown once the keys panel knows it is enabled: focus it only then, and only
    // press Enter once it has the focus (a hidden button takes no focus, and Enter on the body
    // opens nothing).
    await poll(() => page.locator('#create-open').isVisible()).toBe(true);
    await page.locator('#create-open').focus();
    await poll(() => focusedId(page)).toBe('create-open');
    await page.keyboard.press('Enter');
    await poll(() => isOpen(page, 'create-dialog')).toBe(true);
    // The scopes are the service's (its OpenAPI document); the one the role cannot grant says why.
    expect(
      await page.locator('input[name="scope"]').evaluateAll((els) => els.map((e) => (e as HTMLInputElement).value)),
    ).toEqual(['decisions:read', 'decisions:write']);
    const write = page.locator('#scope-decisions-write');
    expect(await write.isDisabled()).toBe(true);
    expect(await page.locator('#scope-reason').textContent()).toMatch(
      /^Your role \(viewer\) in this organisation cannot grant decisions:write/,
    );
    expect(await write.getAttribute('aria-describedby')).toBe('scope-reason');

    // Forced past the form, the server's 403 appears in place, focused and announced.
    await write.evaluate((box: HTMLInputElement) => {
      box.disabled = false;
      box.checked = true;
    });
    await page.locator('#key-name').press('Enter');
    await poll(() => page.locator('#create-error').textContent()).toMatch(
      /^Not allowed\. Your role "viewer" in this organisation cannot grant decisions:write/,
    );
    expect(await page.locator('#create-error').getAttribute('data-status')).toBe('403');
    expect(await focusedId(page)).toBe('create-error');
    await poll(() => announced(page)).toMatch(/\|Not allowed\./);

    // A 400 shows beside its field, with the server's message.
    await page.locator('#key-name').evaluate((input: HTMLInputElement) => input.removeAttribute('maxlength'));
    await page.locator('#key-name').fill('x'.repeat(101));
    expect(await page.locator('#key-name-count').textContent()).toBe('101 / 100');
    await page.locator('#key-name').press('Enter');
    await poll(() => page.locator('#key-name-error').textContent()).toBe('name must be at most 100 characters');
    expect(await focusedId(page)).toBe('key-name');
    expect(await page.locator('#key-name').getAttribute('aria-invalid')).toBe('true');
    await expectAccessible(page, 'field error');
    await shot(page, '09-field-error');
    await expectClean(page);
    await page.close();
  });

  it('tells a user with no workspace to connect a repository first', async () => {
    const orgId = await t.seed.org();
    const user = await t.seed.user();
    await t.seed.member(orgId, user.id, 'member');
    const page = await openPage();
    await signIn(page, t.seed.session(user.id, user.email));

    await poll(() => page.locator('#identity-role').textContent()).toBe('member');
    // The empty state's button appears once the (empty) key list has loaded, after the identity.
    await page.locator('#empty-create').waitFor({ state: 'visible' });
    await page.locator('#empty-create').focus();
    await page.keyboard.press('Enter');
    await poll(() => focusedId(page)).toBe('key-name');
    await page.keyboard.type('first');
    await page.keyboard.press('Enter');
    const error = page.locator('#create-error');
    await poll(() => error.getAttribute('data-status')).toBe('409');
    expect(await error.textContent()).toBe(
      'Connect a repository to this organisation first. You have no workspace in this organisation yet: connect a repository first',
    );
    expect(await focusedId(page)).toBe('create-error');
    expect(await isOpen(page, 'reveal-dialog')).toBe(false);
    await expectClean(page);
    await page.close();
  });

  it('gives a first screen to a user with no organisation: what to do next', async () => {
    const user = await t.seed.user();
    const page = await openPage({ viewport: { width: 320, height: 720 }, theme: 'dark' });
    await signIn(page, t.seed.session(user.id, user.email));
    await poll(() => page.locator('#no-org').isVisible()).toBe(true);
    expect(await focusedId(page)).toBe('no-org-title');
    expect(await page.locator('#no-org').textContent()).toContain('Ask an owner or admin');
    await expectAccessible(page, 'no org');
    // Added meanwhile: "Check again" opens the org.
    const orgId = await t.seed.org('free', 'Newco');
    await t.seed.member(orgId, user.id, 'member');
    await page.locator('#no-org-retry').focus();
    await page.keyboard.press('Enter');
    await poll(() => page.locator('#identity-org-name').textContent()).toBe('Newco');
    await expectClean(page);
    await page.close();
  });

  it('lists three organisations by name and role, switches between them, and keeps the choice in the URL', async () => {
    const page = await openPage();
    await signIn(page, 'not-a-valid-token');
    await poll(() => page.locator('#signin-error').textContent()).toMatch(/not accepted/);
    expect(await page.evaluate(() => sessionStorage.getItem('svc_session'))).toBeNull();

    const user = await t.seed.user();
    const acme = await t.seed.org('pro', 'Acme Corp');
    const beta = await t.seed.org('free', 'Beta Labs');
    const gamma = await t.seed.org('free', 'Gamma Research');
    await t.seed.member(acme, user.id, 'admin');
    await t.seed.member(beta, user.id, 'viewer');
    await t.seed.member(gamma, user.id, 'member');
    const session = t.seed.session(user.id, user.email);
    await page.getByLabel('Session token', { exact: true }).focus();
    await page.keyboard.insertText(session);
    await page.keyboard.press('Enter');

    // Several orgs and none in the session: the picker comes first, by name, with roles.
    await poll(() => page.locator('#org-list').isVisible()).toBe(true);
    expect(await page.locator('#org-form').isVisible()).toBe(false);
    expect(await page.locator('.org-choice .org-name').allTextContents()).toEqual(
      expect.arrayContaining(['Acme Corp', 'Beta Labs', 'Gamma Research']),
    );
    expect(await page.locator(`.org-choice[data-org-id="${beta}"]`).textContent()).toContain('viewer');
    expect(await page.locator('#identity-email').textContent()).toBe(user.email);
    expect(await page.getByRole('button', { name: 'Sign out' }).isVisible()).toBe(true);
    await expectAccessible(page, 'org picker');
    await shot(page, '10-org-picker', true);
    await tabTo(page, `.org-choice[data-org-id="${acme}"]`);
    await page.keyboard.press('Enter');

    await poll(() => page.locator('#identity-role').textContent()).toBe('admin');
    expect(new URL(page.url()).searchParams.get('org')).toBe(acme);
    await poll(() => page.locator('#usage-plan').textContent()).toBe('Pro plan');
    // The switcher names every org with its role.
    expect(await page.locator('#org-switch option').allTextContents()).toEqual(
      expect.arrayContaining(['Acme Corp (admin)', 'Beta Labs (viewer)', 'Gamma Research (member)']),
    );
    expect(await page.locator('#org-switch').inputValue()).toBe(acme);
    await expectAccessible(page, 'org switcher');

    // The same link in a new tab (session handed over) opens the same org.
    const link = page.url();
    const second = await openPage();
    await second.goto(`${t.url}/account`);
    await second.evaluate((s) => sessionStorage.setItem('svc_session', s), session);
    await second.goto(link);
    await poll(() => second.locator('#identity-role').textContent()).toBe('admin');
    expect(await second.locator('#org-switch').inputValue()).toBe(acme);
    await expectClean(second);
    await second.close();

    // Switching changes the view and the URL; Back returns to the previous org.
    await page.locator('#org-switch').focus();
    await page.locator('#org-switch').selectOption(beta);
    await poll(() => page.locator('#identity-role').textContent()).toBe('viewer');
    expect(new URL(page.url()).searchParams.get('org')).toBe(beta);
    await poll(() => page.locator('#usage-plan').textContent()).toBe('Free plan');
    await page.goBack();
    await poll(() => page.locator('#identity-role').textContent()).toBe('admin');

    // A link to an org that is not yours says so and asks again.
    await page.goto(`${t.url}/account?org=0f0e0d0c-0b0a-4908-8706-050403020100`);
    await poll(() => page.locator('#org-picker').isVisible()).toBe(true);
    expect(new URL(page.url()).searchParams.get('org')).toBeNull();
    await poll(() => page.locator('#banner').textContent()).toMatch(/not found, or you are not a member/);
    await expectAccessible(page, 'org not found');
    await expectClean(page);
    await page.close();
  });

  it('rotates a key with the grace period chosen, shows the new secret once, and marks the key in grace', async () => {
    const w = await t.seed.world('owner', 'free');
    const minted = await t.api.post('/api-keys', w.session, { org_id: w.orgId, name: 'billing worker' });
    expect(minted.status).toBe(201);
    const page = await openPage({ viewport: { width: 320, height: 720 } });
    await signIn(page, w.session);
    const row = page.locator('#keys-body tr.key-row').first();
    await poll(() => row.locator('.badge.status').textContent()).toBe('Active');

    await row.getByRole('button', { name: 'Rotate billing worker' }).focus();
    await page.keyboard.press('Enter');
    await poll(() => isOpen(page, 'rotate-dialog')).toBe(true);
    expect(await focusedId(page)).toBe('rotate-grace');
    expect(await page.locator('#rotate-grace').inputValue()).toBe('86400');
    await page.locator('#rotate-grace').selectOption('3600');
    await expectAccessible(page, 'rotate dialog');
    await shot(page, '13-rotate-dialog', true);
    await tabTo(page, '#rotate-confirm');
    await page.keyboard.press('Enter');

    // The new secret, once, in the same reveal; the old one still works during the grace period.
    await poll(() => isOpen(page, 'reveal-dialog')).toBe(true);
    expect(await page.locator('#reveal-title').textContent()).toBe('Save the new secret');
    const fresh = await page.locator('#reveal-key').inputValue();
    expect(fresh).not.toBe(minted.body.key);
    await poll(() => announced(page)).toMatch(/^Key billing worker rotated/);
    await page.keyboard.press('Enter');
    await poll(() => page.locator('#reveal-copy').textContent()).toBe('Copied');
    await tabTo(page, '#reveal-close');
    await page.keyboard.press('Enter');
    expect(await isOpen(page, 'reveal-dialog')).toBe(false);
    expect(await page.evaluate((k) => document.documentElement.outerHTML.includes(k), fresh)).toBe(false);
    expect(await row.locator('.badge.status').textContent()).toBe('In grace');
    expect(await row.locator('.badge.status').getAttribute('title')).toMatch(
      /^Rotated: the previous secret works until \d{4}-/,
    );
    expect((await t.api.get('/me', fresh)).status).toBe(200);
    expect((await t.api.get('/me', minted.body.key)).status).toBe(200);
    await page.reload();
    await poll(() => row.locator('.badge.status').textContent()).toBe('In grace');
    await expectAccessible(page, 'in grace');
    await expectClean(page);
    await page.close();
  });

  it('shows owners and admins every key in the org with who minted it, and lets them revoke one', async () => {
    const w = await t.seed.world('admin', 'pro');
    const colleague = await t.seed.colleague(w.orgId, 'member');
    const theirs = await t.api.post('/api-keys', colleague.session, { org_id: w.orgId, name: 'their laptop' });
    expect(theirs.status).toBe(201);
    const page = await openPage();
    await signIn(page, w.session);
    const orgKey = page.locator(`#org-keys-list tr[data-org-key-id="${theirs.body.id}"]`);
    await poll(() => orgKey.count()).toBe(1);
    await openSection(page, 'org-keys');
    expect(await orgKey.locator('td').first().textContent()).toBe(colleague.email);
    expect(await page.locator('#keys-body tr.key-row').count()).toBe(0);
    await expectAccessible(page, 'org keys');
    await shot(page, '14-org-keys');

    await orgKey.getByRole('button', { name: `Revoke their laptop (minted by ${colleague.email})` }).focus();
    await page.keyboard.press('Enter');
    await poll(() => isOpen(page, 'revoke-dialog')).toBe(true);
    await page.keyboard.type('their laptop');
    await page.keyboard.press('Enter');
    await poll(() => orgKey.getAttribute('data-status')).toBe('revoked');
    // The page moves focus once the org's keys, the caller's keys and the audit log have all
    // reloaded; the row's new status shows with the first of the three.
    await poll(() => focusedId(page)).toBe('org-keys-title');
    expect((await t.api.get('/me', theirs.body.key)).status).toBe(401);
    await poll(() => page.locator('#audit-list tbody tr').first().locator('th').textContent()).toBe(
      'api_key.revoked_by_admin',
    );
    await expectClean(page);
    await page.close();
  });

  it('shows owners and admins the audit log, filtered by action and period, and hides it from members', async () => {
    const w = await t.seed.world('owner', 'free');
    const colleague = await t.seed.colleague(w.orgId, 'member');
    for (const name of ['alpha', 'beta']) {
      expect((await t.api.post('/api-keys', colleague.session, { org_id: w.orgId, name })).status).toBe(201);
    }
    const own = await t.api.post('/api-keys', w.session, { org_id: w.orgId, name: 'mine' });
    expect((await t.api.delete(`/api-keys/${own.body.id}`, w.session)).status).toBe(204);
    const page = await openPage({ viewport: { width: 768, height: 900 } });
    await signIn(page, w.session);
    const audit = page.locator('#audit-list tbody tr');
    await poll(() => audit.count()).toBe(4);
    await poll(() => page.locator('#org-admin').isVisible()).toBe(true);
    // The audit log is a section of its own: the menu link names it in the URL, so Back and a
    // link work; the keys are the first section.
    expect(await page.locator('#audit-block').isVisible()).toBe(false);
    await openSection(page, 'audit');
    expect(new URL(page.url()).hash).toBe('#audit');
    expect(await page.locator('#sections-nav a[href="#audit"]').getAttribute('aria-current')).toBe('page');
    await poll(() => focusedId(page)).toBe('audit-title');
    expect(await page.locator('#panel-keys').isVisible()).toBe(false);
    await page.goBack();
    await poll(() => page.locator('#panel-keys').isVisible()).toBe(true);
    expect(await page.locator('#audit-block').isVisible()).toBe(false);
    await page.goForward();
    await poll(() => page.locator('#audit-block').isVisible()).toBe(true);
    const linked = await openPage();
    await linked.goto(`${t.url}/account`);
    await linked.evaluate((s) => sessionStorage.setItem('svc_session', s), w.session);
    // From /account the link is a same-document jump: reload it to open it as a new tab would.
    await linked.goto(page.url());
    await linked.reload();
    await poll(() => linked.locator('#audit-list tbody tr').count()).toBe(4);
    expect(await linked.locator('#audit-block').isVisible()).toBe(true);
    expect(await linked.locator('#panel-keys').isVisible()).toBe(false);
    await expectClean(linked);
    await linked.close();
    // Newest first; actors by e-mail (GET /orgs/{id}/members), "you" for yourself.
    expect(await audit.first().locator('th').textContent()).toBe('api_key.revoked');
    expect(await audit.first().locator('td').nth(1).textContent()).toBe('you');
    expect(await audit.last().locator('td').nth(1).textContent()).toBe(colleague.email);
    await expectAccessible(page, 'audit log');
    await shot(page, '12-audit', '#audit-block');

    // Filter by action (the options come from the route's OpenAPI enum).
    await page.locator('#audit-action').focus();
    await page.locator('#audit-action').selectOption('api_key.minted');
    await tabTo(page, '#audit-filters button[type="submit"]');
    await page.keyboard.press('Enter');
    await poll(() => audit.count()).toBe(3);
    await poll(() => announced(page)).toMatch(/Audit log filtered/);
    await page.locator('#audit-action').selectOption('member.removed');
    await page.locator('#audit-filters button[type="submit"]').focus();
    await page.keyboard.press('Enter');
    await poll(() => page.locator('#audit-list').textContent()).toBe(
      'No events match this filter. Clear it to see every event.',
    );
    await expectClean(page);
    await page.close();

    // A member sees no organisation section at all.
    const other = await openPage();
    await signIn(other, colleague.session);
    await poll(() => other.locator('#keys-body tr.key-row').count()).toBe(2);
    await poll(() => other.locator('#usage-plan').isVisible()).toBe(true);
    expect(await other.locator('#org-admin').isVisible()).toBe(false);
    await expectClean(other);
    await other.close();
  });

  it("lists the webhook endpoints of the org with their state, and opens each one's delivery log", async () => {
    const w = await t.seed.world('owner', 'pro');
    const created = await t.api.post(`/orgs/${w.orgId}/webhooks`, w.session, {
      url: 'https://hooks.example.com/keys',
      event_types: ['api_key.created', 'api_key.revoked'],
      description: 'Security team',
    });
    expect(created.status).toBe(201);
    const page = await openPage({ viewport: { width: 1440, height: 900 }, theme: 'dark' });
    await signIn(page, w.session);
    const hook = page.locator(`#webhooks-list tr[data-webhook-id="${created.body.id}"]`);
    await poll(() => hook.count()).toBe(1);
    await openSection(page, 'webhooks');
    expect(await hook.locator('th code').textContent()).toBe('https://hooks.example.com/keys');
    expect(await hook.locator('th .hint').textContent()).toBe('Security team');
    expect(await hook.locator('td').first().textContent()).toBe('api_key.created, api_key.revoked');
    expect(await hook.locator('.badge.status').textContent()).toBe('Enabled');
    await hook.getByRole('button', { name: 'Deliveries to https://hooks.example.com/keys' }).focus();
    await page.keyboard.press('Enter');
    await poll(() => page.locator('#webhooks-list tr.details-row').textContent()).toBe('No deliveries yet.');
    expect(await hook.getByRole('button', { name: /Deliveries/ }).getAttribute('aria-expanded')).toBe('true');
    await poll(() => announced(page)).toMatch(/0 deliveries/);
    await expectAccessible(page, 'webhooks (dark)');
    await shot(page, '15-webhooks', '#webhooks-block');
    await page.keyboard.press('Enter');
    await poll(() => page.locator('#webhooks-list tr.details-row').count()).toBe(0);
    await expectClean(page);
    await page.close();
  });

  it('warns at 80 % and 100 % of a daily limit, and refreshes the meters on focus, every minute and after UTC midnight', async () => {
    const w = await t.seed.world('owner', 'free');
    await t.app.get(UsageService).charge(w.orgId, 'imports', 8);
    await t.app.get(UsageService).charge(w.orgId, 'asks', 100);
    // page.clock is the whole context's clock (Playwright): installed and fast-forwarded past UTC
    // midnight here, it would stay in every page opened after this test. Its own browser keeps it here.
    const clocked = await launchContext();
    const page = await openPage({ viewport: { width: 1440, height: 900 }, in: clocked });
    const usageCalls: string[] = [];
    page.on('request', (req) => {
      if (new URL(req.url()).pathname === '/usage') usageCalls.push(req.url());
    });
    await page.clock.install();
    await signIn(page, w.session);
    await poll(() => page.locator('[data-meter="imports"] .meter-warning').textContent()).toBe(
      "80 % of today's limit used.",
    );
    expect(await page.locator('[data-meter="imports"]').getAttribute('class')).toContain('high');
    expect(await page.locator('[data-meter="queries"] .meter-warning').textContent()).toBe(
      'Daily limit reached: more queries are refused until the reset.',
    );
    expect(await page.locator('[data-meter="queries"]').getAttribute('class')).toContain('full');
    expect(await page.locator('[data-meter="captures"] .meter-warning').isVisible()).toBe(false);
    await expectAccessible(page, 'usage warnings');
    await shot(page, '11-usage', '#usage');

    // Focus: a charge made elsewhere shows when the tab comes back.
    await t.app.get(UsageService).charge(w.orgId, 'imports', 1);
    const before = usageCalls.length;
    await page.evaluate(() => window.dispatchEvent(new Event('focus')));
    await poll(() => page.locator('[data-meter="imports"] .meter-value').textContent()).toBe('9 / 10');
    expect(usageCalls.length).toBeGreaterThan(before);

    // Every minute (fastForward fires each due timer once).
    const beforeTick = usageCalls.length;
    await page.clock.fastForward(61_000);
    await poll(() => usageCalls.length).toBeGreaterThan(beforeTick);

    // Just after the next UTC midnight (resets_at): 5 s before it nothing is due; 2 s after it is.
    const resetsAt = Date.parse((await page.locator('#usage-reset time').getAttribute('datetime'))!);
    await page.clock.fastForward(Math.max(0, resetsAt - 5_000 - (await page.evaluate(() => Date.now()))));
    await poll(() => page.evaluate(() => document.getElementById('usage')!.getAttribute('aria-busy'))).toBe('false');
    const beforeMidnight = usageCalls.length;
    await page.clock.fastForward(2_000);
    expect(usageCalls.length).toBe(beforeMidnight);
    await page.clock.fastForward(5_000);
    await poll(() => usageCalls.length).toBeGreaterThan(beforeMidnight);
    await expectClean(page);
    await clocked.close();
  });

  it('says when API keys are not enabled on the deployment', async () => {
    const bare = await startTestApp({ db: t.db, env: { API_KEY_SECRET: undefined } });
    ownOrigins.add(new URL(bare.url).origin);
    // Its own browser, closed before the app: Chromium keeps sockets to an origin after its pages
    // close, among them ones it opened ahead of need and never sent a request on. The app's close
    // waits for such a socket until the server's idle timeout (HTTP_IDLE_TIMEOUT_MS, 30 s), which
    // was this test's timeout whenever Chromium had one open. Closing the browser closes them all.
    const browser = await launchContext();
    try {
      const w = await bare.seed.world('owner');
      const page = await openPage({ in: browser });
      await page.goto(`${bare.url}/account`);
      await page.getByLabel('Session token', { exact: true }).focus();
      await page.keyboard.insertText(w.session);
      await page.keyboard.press('Enter');
      await poll(() => page.locator('#banner').getAttribute('data-status')).toBe('501');
      expect(await page.locator('#banner').textContent()).toBe(
        'API keys are not enabled on this deployment. API keys are not configured on this deployment',
      );
      expect(await page.locator('#create-open').isVisible()).toBe(false);
      expect(await page.locator('#keys').isVisible()).toBe(false);
      // Usage still works without keys.
      await poll(() => page.locator('#usage-plan').textContent()).toBe('Free plan');
      await expectAccessible(page, 'keys not enabled');
      await expectClean(page);
    } finally {
      await browser.close();
      await bare.close();
      ownOrigins.delete(new URL(bare.url).origin);
    }
  });
});
