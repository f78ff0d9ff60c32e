import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { ApiKeyList } from '../../../../packages/client/src/types.js';
import { loadPage, testContext } from '../test/page.js';
import { KeysPanel } from './keys-panel.js';
import type { KeyRecord } from './key-view.js';

const key = (id: string, state: KeyRecord['state'], name = id): KeyRecord => ({
  id,
  org_id: '00000000-0000-4000-8000-0000000000aa',
  name,
  lookup: 'AbCdEfGhIjKl',
  last4: 'Zz9Q',
  scopes: ['decisions:read'],
  created_at: '2026-11-01T00:00:00Z',
  state,
});

describe('the keys panel', () => {
  beforeEach(loadPage);

  it('lists usable keys (active, disabled) first and collapses the others, by the state the service answered', async () => {
    const keys = [
      key('a', 'active'),
      key('d', 'disabled'),
      key('r', 'revoked'),
      key('e', 'expired'),
      key('p', 'pending'),
    ];
    const list = vi.fn(async (): Promise<ApiKeyList> => ({ keys, next_cursor: 'next' }) as ApiKeyList);
    const ctx = testContext({ api: { keys: { list } } });
    const panel = new KeysPanel(ctx);
    await panel.load();
    expect(list).toHaveBeenCalledWith({ org_id: ctx.session.me!.org_id, limit: 50 });
    const ids = (body: string) =>
      [...document.querySelectorAll<HTMLElement>(`#${body} tr.key-row`)].map((r) => r.dataset.keyId);
    expect(ids('keys-body')).toEqual(['a', 'd']);
    expect(ids('keys-inactive')).toEqual(['r', 'e', 'p']);
    expect(document.getElementById('keys-inactive')!.hidden).toBe(true);
    expect(document.getElementById('inactive-toggle')!.textContent).toBe('Show 3 inactive keys');
    expect(document.getElementById('keys-more')!.hidden).toBe(false);
    // No PATCH or rotate route in the document: neither action is offered.
    const actions = [...document.querySelectorAll('tr[data-key-id="a"] button')].map((b) => b.textContent);
    expect(actions).toEqual(['Details', 'Revoke']);

    document.getElementById('inactive-toggle')!.click();
    expect(document.getElementById('keys-inactive')!.hidden).toBe(false);
    expect(document.getElementById('inactive-toggle')!.getAttribute('aria-expanded')).toBe('true');
  });

  it('says so once when the deployment has no API keys (501), and keeps the list hidden', async () => {
    const { ApiError } = await import('../errors.js');
    const refused = new ApiError(new Response(null, { status: 501 }), {
      statusCode: 501,
      error: 'Not Implemented',
      message: 'API keys are not configured on this deployment',
    });
    const ctx = testContext({ api: { keys: { list: () => Promise.reject(refused) } } });
    const panel = new KeysPanel(ctx);
    await panel.load();
    expect(panel.enabled).toBe(false);
    expect(document.getElementById('keys')!.hidden).toBe(true);
    expect(document.getElementById('banner')!.textContent).toBe(
      'API keys are not enabled on this deployment. API keys are not configured on this deployment',
    );
  });
});
