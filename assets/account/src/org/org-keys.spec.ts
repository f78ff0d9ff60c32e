import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { OrgApiKey } from '../../../../packages/client/src/types.js';
import { loadPage, testContext } from '../test/page.js';
import { orgKeyRow } from './org-keys.js';

const orgKey = (over: Partial<OrgApiKey>): OrgApiKey => ({
  id: 'k1',
  org_id: 'o1',
  name: 'their laptop',
  lookup: 'AbCdEfGhIjKl',
  last4: 'Zz9Q',
  scopes: ['decisions:read'],
  created_at: '2026-11-01T00:00:00Z',
  user_id: 'u2',
  owner_email: 'bob@example.com',
  owner_status: 'member',
  state: 'active',
  ...over,
});

describe('a row of the organisation’s keys', () => {
  beforeEach(loadPage);

  it('shows the state the service answered, and offers Revoke only while the key is not revoked', () => {
    const ctx = testContext();
    const active = orgKeyRow(ctx, orgKey({}));
    expect(active.dataset.status).toBe('active');
    expect(active.querySelector('button')!.getAttribute('aria-label')).toBe(
      'Revoke their laptop (minted by bob@example.com)',
    );
    // Revoked by the service's word alone (no revoked_at in this record): no button.
    const revoked = orgKeyRow(ctx, orgKey({ state: 'revoked' }));
    expect(revoked.dataset.status).toBe('revoked');
    expect(revoked.querySelector('.badge.status')!.textContent).toBe('Revoked');
    expect(revoked.querySelector('button')).toBeNull();
    const removed = orgKeyRow(ctx, orgKey({ owner_status: 'removed' }));
    expect(removed.querySelectorAll('td')[0]!.textContent).toBe('bob@example.com (no longer a member)');
  });

  it('labels each control an admin set "set by an admin": the disabled state at its badge, the others by name', () => {
    const ctx = testContext();
    const status = (row: HTMLElement) => row.querySelectorAll('td')[2]!;
    const byAdmin = orgKeyRow(
      ctx,
      orgKey({
        state: 'disabled',
        enabled: false,
        controls_set_by: { enabled: 'admin', rate_limits: 'admin', credits: 'owner', metadata: 'admin' },
      }),
    );
    expect(status(byAdmin).textContent).toBe(
      'Disabled set by an admin' + 'Rate limits set by an admin' + 'Metadata set by an admin',
    );
    expect(status(byAdmin).querySelectorAll('.badge.set-by')).toHaveLength(3);
    // The owner's own controls carry no label; nor does a revoked key's old disabling.
    const byOwner = orgKeyRow(
      ctx,
      orgKey({ state: 'disabled', enabled: false, controls_set_by: { enabled: 'owner' } }),
    );
    expect(status(byOwner).textContent).toBe('Disabled');
    const revoked = orgKeyRow(ctx, orgKey({ state: 'revoked', enabled: false, controls_set_by: { enabled: 'admin' } }));
    expect(status(revoked).textContent).toBe('Revoked');
  });
  it('offers Enable on a disabled key, through the org route, whoever disabled it', async () => {
    const updateKey = vi.fn(async () => ({}));
    const ctx = testContext({ api: { orgs: { updateKey } } });
    const row = orgKeyRow(ctx, orgKey({ state: 'disabled', enabled: false, controls_set_by: { enabled: 'admin' } }));
    const enable = row.querySelector<HTMLButtonElement>('button[aria-label^="Enable"]')!;
    expect(enable.getAttribute('aria-label')).toBe('Enable their laptop (minted by bob@example.com)');
    enable.click();
    await vi.waitFor(() => expect(updateKey).toHaveBeenCalledWith(ctx.session.orgId, 'k1', { enabled: true }));
    expect(orgKeyRow(ctx, orgKey({})).querySelector('button[aria-label^="Enable"]')).toBeNull();
  });
});
