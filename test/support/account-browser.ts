/// <reference lib="dom" />
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect } from 'vitest';
import type { BrowserTier } from './chromium.js';
import { startTestApp, type TestApp } from './test-app.js';

declare global {
  interface Window {
    // The axe-core global that expectAccessible evaluates into the page.
    axe?: {
      run: (
        context: Document,
        options: object,
      ) => Promise<{
        violations: { id: string; nodes: { target: string[]; failureSummary?: string }[] }[];
        passes: unknown[];
      }>;
    };
  }
}

let axeSource: string | undefined;

/**
 * axe-core over the whole document (open dialogs included): zero violations at any impact. Its
 * source is evaluated through the DevTools protocol, which the page's CSP does not govern.
 */
export async function expectAccessible(page: Page, state: string): Promise<void> {
  axeSource ??= readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  if (!(await page.evaluate(() => Boolean(window.axe)))) await page.evaluate(axeSource);
  const { violations, passed } = await page.evaluate(async () => {
    const result = await window.axe!.run(document, { resultTypes: ['violations'] });
    return {
      violations: result.violations.map(
        (v) => `${v.id}: ${v.nodes.map((n) => `${n.target.join(' ')} (${n.failureSummary ?? ''})`).join('; ')}`,
      ),
      passed: result.passes.length,
    };
  });
  expect(violations, state).toEqual([]);
  // axe really ran its rules, not an empty pass.
  expect(passed, state).toBeGreaterThan(10);
}

/** Polls a browser-side value until it matches: the page loads its panels side by side. */
export const poll = <T>(fn: () => T | Promise<T>) => expect.poll(fn, { timeout: 10_000, interval: 50 });

/** Opens a section of the account page from its menu (a link to `#<section>`), as a person would. */
export async function openSection(page: Page, section: string): Promise<void> {
  const link = page.locator(`#sections-nav a[href="#${section}"]`);
  await link.waitFor({ state: 'visible' });
  await link.click();
  await poll(() => page.locator(`[data-section-panel="${section}"]`).isVisible()).toBe(true);
}

/** The account page's world for one describe block: the real app, a Chromium with its own profile, page errors. */
export interface AccountBrowser {
  readonly t: TestApp;
  readonly context: BrowserContext;
  /** Uncaught page errors and console errors (other than failed loads the tests provoke). */
  readonly errors: string[];
  /** A new tab on /account, signed in with the session token. */
  signIn(session: string): Promise<Page>;
}

/**
 * Starts the app and a headless Chromium before the describe block's tests and closes both after.
 * Call it inside `describe.skipIf(!tier.run)(…)`; the returned object's fields are set once
 * `beforeAll` has run. `env` is the app's environment beyond the test defaults (e.g. API_KEY_SCOPES).
 */
export function accountBrowser(
  tier: BrowserTier,
  options: { permissions?: string[]; env?: Record<string, string> } = {},
): AccountBrowser {
  const errors: string[] = [];
  let t: TestApp | undefined;
  let context: BrowserContext | undefined;
  let userDataDir: string | undefined;

  beforeAll(async () => {
    t = await startTestApp({ env: options.env });
    userDataDir = mkdtempSync(join(tmpdir(), 'account-chromium-'));
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: tier.run ? tier.path : undefined,
      headless: true,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
      viewport: { width: 1440, height: 900 },
      permissions: options.permissions,
    });
    context.setDefaultTimeout(10_000);
  });
  afterAll(async () => {
    await context?.close();
    if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
    await t?.close();
  });

  return {
    get t() {
      return t!;
    },
    get context() {
      return context!;
    },
    errors,
    async signIn(session: string): Promise<Page> {
      const page = await context!.newPage();
      page.on('pageerror', (err) => errors.push(`pageerror: ${err.message}`));
      page.on('console', (msg) => {
        if (msg.type() === 'error' && !msg.text().startsWith('Failed to load resource')) errors.push(msg.text());
      });
      await page.goto(`${t!.url}/account`);
      await page.getByLabel('Session token', { exact: true }).focus();
      await page.keyboard.insertText(session);
      await page.keyboard.press('Enter');
      return page;
    },
  };
}
