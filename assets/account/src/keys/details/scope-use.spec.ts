import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { OrgApiKey, ScopeUsage } from '../../../../../packages/client/src/types.js';
import { orgKeyRows } from '../../org/org-keys.js';
import { loadPage, testContext } from '../../test/page.js';
import type { KeyRecord } from '../key-view.js';
import { initNarrowDialog } from '../narrow-dialog.js';
import { loadScopeUse, scopeUseSection } from './scope-use.js';

const key: KeyRecord = {
  id: '11111111-2222-4333-8444-555555555555',
  org_id: '00000000-0000-4000-8000-0000000000aa',
  name: 'ingest',
  lookup: 'AbCdEfGhIjKl',
  last4: 'Zz9Q',
  scopes: ['decisions:read', 'invoices:read'],
  created_at: '2026-11-01T00:00:00Z',
  state: 'active',
};
const usage: ScopeUsage = {
  days: 30,
  scopes: [
    { scope: 'decisions:read', requests: 7, last_used_at: '2026-11-27T09:14:03.120Z' },
    { scope: 'invoices:read', requests: 0 },
  ],
  unused: ['invoices:read'],
};
/** A deployment whose document lists both lists' scope-usage and PATCH routes. */
const doc = {
  paths: Object.fromEntries(
    ['/api-keys/{keyID}', '/orgs/{org_id}/api-keys/{keyID}'].flatMap((path) => [
      [path, { patch: {} }],
      [`${path}/scope-usage`, { get: {} }],
    ]),
  ),
};
const narrowButton = (root: ParentNode) =>
  root.querySelector<HTMLButtonElement>('button[aria-label="Narrow to what it uses: ingest"]');

describe('a key’s scope use', () => {
  beforeEach(() => {
    loadPage();
    initNarrowDialog();
  });

  it('shows each scope’s requests of the last 30 days and the unused ones, and offers to narrow the key', async () => {
    const scopeUsage = vi.fn(async () => usage);
    const ctx = testContext({ doc, api: { keys: { scopeUsage } } });
    const slot = scopeUseSection.render(ctx, {} as never, key)!;
    document.body.append(slot);
    await loadScopeUse(ctx, key, slot, 'own');
    expect(scopeUsage).toHaveBeenCalledWith(key.id, { days: 30 });
    expect([...slot.querySelectorAll('li')].map((li) => li.dataset.scope)).toEqual(['decisions:read', 'invoices:read']);
    expect(slot.querySelector('li[data-scope="invoices:read"]')!.textContent).toBe('invoices:read 0 requests');
    expect(slot.querySelector('li[data-scope="decisions:read"] time')).not.toBeNull();
    expect(slot.querySelector('.scope-unused')!.textContent).toBe('Unused for 30 days: invoices:read');
    narrowButton(slot)!.click();
    expect((document.getElementById('narrow-dialog') as HTMLDialogElement).open).toBe(true);
    expect(document.activeElement).toBe(document.querySelector('#narrow-scopes input[value="decisions:read"]'));
  });

  it('offers no narrowing when every scope was used, for a key of one scope, nor without the PATCH route', async () => {
    const allUsed = { ...usage, scopes: [usage.scopes[0]!], unused: [] };
    const ctx = testContext({ doc, api: { keys: { scopeUsage: async () => allUsed } } });
    const slot = document.createElement('div');
    await loadScopeUse(ctx, key, slot, 'own');
    expect(slot.textContent).toContain('Every scope it holds was used in the last 30 days.');
    expect(slot.querySelector('button')).toBeNull();

    // Its one scope unused: shown, but narrowing would leave nothing.
    const oneUnused = { days: 30, scopes: [usage.scopes[1]!], unused: ['invoices:read'] };
    const single = testContext({ doc, api: { keys: { scopeUsage: async () => oneUnused } } });
    await loadScopeUse(single, key, slot, 'own');
    expect(slot.querySelector('.scope-unused')!.textContent).toBe('Unused for 30 days: invoices:read');
    expect(narrowButton(slot)).toBeNull();

    const readOnly = testContext({
      doc: { paths: { '/api-keys/{keyID}/scope-usage': { get: {} } } },
      api: { keys: { scopeUsage: async () => usage } },
    });
    await loadScopeUse(readOnly, key, slot, 'own');
    expect(slot.querySelector('.scope-unused')).not.toBeNull();
    expect(narrowButton(slot)).toBeNull();
    // Without the scope-usage route the details have no such section at all.
    expect(scopeUseSection.render(testContext(), {} as never, key)).toBeNull();
  });

  it('opens under a row of the org’s keys from its “Scopes” button, through the org’s route', async () => {
    const keyScopeUsage = vi.fn(async () => usage);
    const ctx = testContext({ doc, api: { orgs: { keyScopeUsage } } });
    const orgKey = { ...key, user_id: 'u2', owner_email: 'bob@example.com', owner_status: 'member' } as OrgApiKey;
    const [row, details] = orgKeyRows(ctx, orgKey);
    document.body.append(row!, details!);
    expect(details!.hidden).toBe(true);
    const toggle = row!.querySelector<HTMLButtonElement>('button[aria-label="Scopes of ingest"]')!;
    expect(toggle.getAttribute('aria-controls')).toBe(details!.id);
    toggle.click();
    expect(toggle.getAttribute('aria-expanded')).toBe('true');
    expect(details!.hidden).toBe(false);
    await vi.waitFor(() => expect(narrowButton(details!)).not.toBeNull());
    expect(keyScopeUsage).toHaveBeenCalledWith(key.org_id, key.id, { days: 30 });
    toggle.click();
    expect(details!.hidden).toBe(true);
  });

  it('shows a failed read in place with “Try again”', async () => {
    const ctx = testContext({ doc, api: { keys: { scopeUsage: () => Promise.reject(new Error('network down')) } } });
    const slot = document.createElement('div');
    await loadScopeUse(ctx, key, slot, 'own');
    expect(slot.querySelector('.alert')!.textContent).toContain('network down');
    expect(slot.querySelector('button.retry')).not.toBeNull();
  });
});
