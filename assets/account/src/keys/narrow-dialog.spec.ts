import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { ApiKey, ScopeUsage } from '../../../../packages/client/src/types.js';
import { ApiError } from '../errors.js';
import { loadPage, testContext } from '../test/page.js';
import type { KeysPanel } from './keys-panel.js';
import type { KeyRecord } from './key-view.js';
import { EMPTY_SET, initNarrowDialog, openNarrow, refusedBy } from './narrow-dialog.js';

const key: KeyRecord = {
  id: '11111111-2222-4333-8444-555555555555',
  org_id: '00000000-0000-4000-8000-0000000000aa',
  name: 'ingest',
  lookup: 'AbCdEfGhIjKl',
  last4: 'Zz9Q',
  scopes: ['decisions:read', 'decisions:write', 'invoices:read'],
  created_at: '2026-11-01T00:00:00Z',
  state: 'active',
};
/** Read used 12 times, write 3 times, invoices:read never, in the last 30 days. */
const usage: ScopeUsage = {
  days: 30,
  scopes: [
    { scope: 'decisions:read', requests: 12, last_used_at: new Date().toISOString() },
    { scope: 'decisions:write', requests: 3, last_used_at: new Date().toISOString() },
    { scope: 'invoices:read', requests: 0 },
  ],
  unused: ['invoices:read'],
};

const el = (id: string) => document.getElementById(id)!;
const dialog = () => el('narrow-dialog') as HTMLDialogElement;
const confirm = () => el('narrow-confirm') as HTMLButtonElement;
const box = (scope: string) =>
  document.querySelector<HTMLInputElement>(`#narrow-scopes input[value="${CSS.escape(scope)}"]`)!;
/** Ticks or unticks a box as a click would, with the change event the preview listens to. */
function setBox(scope: string, checked: boolean): void {
  box(scope).checked = checked;
  box(scope).dispatchEvent(new Event('change', { bubbles: true }));
}
const submit = () => el('narrow-form').dispatchEvent(new Event('submit', { cancelable: true }));
const narrowed = (scopes: string[]): ApiKey => ({ ...key, scopes });

describe('narrowing a key to what it uses', () => {
  beforeEach(() => {
    loadPage();
    initNarrowDialog();
  });

  it('adds up, per scope removed, the requests of the period a set would have refused', () => {
    expect(refusedBy(usage, ['decisions:read', 'decisions:write'])).toEqual({
      total: 0,
      removed: [{ scope: 'invoices:read', requests: 0 }],
    });
    expect(refusedBy(usage, ['invoices:read'])).toEqual({
      total: 15,
      removed: [
        { scope: 'decisions:read', requests: 12 },
        { scope: 'decisions:write', requests: 3 },
      ],
    });
  });

  it('previews the used scopes ticked, only the ones the key holds, and what each removal would have refused', () => {
    openNarrow(testContext(), key, usage, null);
    expect(dialog().open).toBe(true);
    const boxes = [...document.querySelectorAll<HTMLInputElement>('#narrow-scopes input')];
    expect(boxes.map((b) => [b.value, b.checked, b.disabled])).toEqual([
      ['decisions:read', true, false],
      ['decisions:write', true, false],
      ['invoices:read', false, false],
    ]);
    expect(document.activeElement).toBe(boxes[0]);
    expect(box('decisions:read').closest('label')!.textContent).toBe('decisions:read 12 requests, last just now');
    expect(box('invoices:read').closest('label')!.textContent).toBe('invoices:read not used in 30 days');
    expect(el('narrow-text').textContent).toContain(
      'In the last 30 days “ingest” used decisions:read, decisions:write.',
    );
    expect(el('narrow-impact').querySelector('[data-refused]')!.textContent).toBe(
      'With these scopes, no request of the last 30 days would have been refused.',
    );
    expect([...el('narrow-impact').querySelectorAll('li')].map((li) => li.textContent)).toEqual([
      'Removes invoices:read: 0 requests refused',
    ]);
    expect(confirm().disabled).toBe(false);

    setBox('decisions:write', false);
    expect(el('narrow-impact').querySelector('[data-refused]')!.textContent).toBe(
      'With these scopes, 3 requests of the last 30 days would have been refused.',
    );
    expect([...el('narrow-impact').querySelectorAll('li')].map((li) => li.textContent)).toEqual([
      'Removes decisions:write: 3 requests refused',
      'Removes invoices:read: 0 requests refused',
    ]);

    // Keeping everything changes nothing: nothing to confirm.
    setBox('decisions:write', true);
    setBox('invoices:read', true);
    expect(confirm().disabled).toBe(true);
    expect(el('narrow-impact').textContent).toContain('nothing would change');
  });

  it('sends the PATCH with the scopes kept, and shows the key’s new scopes in its row', async () => {
    const update = vi.fn(async (_id: string, body: { scopes?: string[] }) => narrowed(body.scopes!));
    const ctx = testContext({ api: { keys: { update } } });
    const panel = { put: vi.fn(), focusRow: vi.fn() };
    ctx.panels.keys = panel as unknown as KeysPanel;
    openNarrow(ctx, key, usage, null);
    setBox('decisions:write', false);
    submit();
    await vi.waitFor(() => expect(dialog().open).toBe(false));
    expect(update).toHaveBeenCalledExactlyOnceWith(key.id, { scopes: ['decisions:read'] });
    expect(panel.put).toHaveBeenCalledWith(expect.objectContaining({ id: key.id, scopes: ['decisions:read'] }));
    expect(panel.focusRow).toHaveBeenCalledWith(key.id);
  });

  it('narrows through the org’s route for a key of the org’s list', async () => {
    const updateKey = vi.fn(async (_org: string, _id: string, body: { scopes?: string[] }) => narrowed(body.scopes!));
    const ctx = testContext({ api: { orgs: { updateKey } } });
    openNarrow(ctx, key, usage, null, 'org');
    submit();
    await vi.waitFor(() => expect(dialog().open).toBe(false));
    expect(updateKey).toHaveBeenCalledExactlyOnceWith(key.org_id, key.id, {
      scopes: ['decisions:read', 'decisions:write'],
    });
  });

  it('never sends an empty set: confirm is disabled and says why', () => {
    const update = vi.fn();
    openNarrow(testContext({ api: { keys: { update } } }), key, usage, null);
    setBox('decisions:read', false);
    setBox('decisions:write', false);
    expect(confirm().disabled).toBe(true);
    expect(el('narrow-empty').hidden).toBe(false);
    expect(el('narrow-empty').textContent).toBe(EMPTY_SET);
    submit();
    expect(update).not.toHaveBeenCalled();
    setBox('decisions:read', true);
    expect(el('narrow-empty').hidden).toBe(true);
    expect(confirm().disabled).toBe(false);
  });

  it('shows the service’s refusal in the dialog, focused, and keeps it open', async () => {
    const refused = new ApiError(new Response(null, { status: 403 }), {
      statusCode: 403,
      error: 'Forbidden',
      message: 'A key is never widened; mint a new one: decisions:write is not one of its scopes',
    });
    const ctx = testContext({ api: { keys: { update: () => Promise.reject(refused) } } });
    openNarrow(ctx, key, usage, null);
    submit();
    await vi.waitFor(() => expect(el('narrow-error').hidden).toBe(false));
    expect(el('narrow-error').textContent).toBe(
      'Not allowed. A key is never widened; mint a new one: decisions:write is not one of its scopes',
    );
    expect(document.activeElement).toBe(el('narrow-error'));
    expect(dialog().open).toBe(true);
    expect(confirm().disabled).toBe(false);
    expect(confirm().textContent).toBe('Narrow key');
  });
});
