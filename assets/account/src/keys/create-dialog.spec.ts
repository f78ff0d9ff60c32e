import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { ScopeList } from '../../../../packages/client/src/types.js';
import { ApiError } from '../errors.js';
import { configureServiceKeyForm } from '../org/service-keys.js';
import { loadPage, principal, testContext } from '../test/page.js';
import { configureCreateForm } from './create-dialog.js';
import { loadScopeChoices } from './scopes.js';

/** A document whose mint request has other rules than today's: the form follows it. */
const doc = {
  components: {
    schemas: {
      MintApiKeyRequest: {
        properties: {
          name: { type: 'string', maxLength: 42 },
          scopes: {
            type: 'array',
            items: { type: 'string', enum: ['decisions:read', 'decisions:write', 'ledger:admin'] },
          },
          expires_in_days: { type: 'integer', minimum: 0, maximum: 90 },
        },
      },
    },
  },
};

/** A host's registry as GET /scopes answers a member. */
const registry: ScopeList = {
  scopes: [
    { scope: 'decisions:read', description: 'Read decisions.', grantable: true },
    { scope: 'invoices:read', description: 'Read invoices', grantable: true },
    { scope: 'invoices:write', description: 'Create and change invoices', grantable: false },
  ],
};

const boxes = (name = 'scope') => [...document.querySelectorAll<HTMLInputElement>(`input[name="${name}"]`)];

describe('the create dialog', () => {
  beforeEach(loadPage);

  it('offers the scopes GET /scopes answers, each described, those the role cannot grant disabled with the reason', async () => {
    const scopes = vi.fn(async () => registry);
    const ctx = testContext({ doc, api: { scopes }, me: principal({ org_role: 'member' }) });
    await loadScopeChoices(ctx);
    configureCreateForm(ctx);
    expect(scopes).toHaveBeenCalledWith({ orgId: ctx.session.me!.org_id });
    expect(boxes().map((b) => [b.value, b.disabled, b.checked])).toEqual([
      ['decisions:read', false, true],
      ['invoices:read', false, false],
      ['invoices:write', true, false],
    ]);
    expect(boxes().map((b) => b.closest('label')!.textContent)).toEqual([
      'decisions:read Read decisions.',
      'invoices:read Read invoices',
      'invoices:write Create and change invoices',
    ]);
    expect(boxes()[2]!.getAttribute('aria-describedby')).toBe('scope-reason');
    expect(boxes()[1]!.hasAttribute('aria-describedby')).toBe(false);
    const reason = document.getElementById('scope-reason')!;
    expect(reason.textContent).toBe(
      'Your role (member) in this organisation cannot grant invoices:write: your keys can have decisions:read, invoices:read. An owner or admin can change your role.',
    );
    expect(reason.hidden).toBe(false);
    // The service key form offers the same choices, with its own reason.
    configureServiceKeyForm(ctx);
    expect(boxes('service-scope').map((b) => [b.value, b.disabled, b.checked])).toEqual([
      ['decisions:read', false, true],
      ['invoices:read', false, false],
      ['invoices:write', true, false],
    ]);
    expect(boxes('service-scope')[2]!.getAttribute('aria-describedby')).toBe('service-scope-reason');
    expect(document.getElementById('service-scope-reason')!.hidden).toBe(false);
  });

  it('falls back to the document’s scopes, grantable as far as the caller’s own, when GET /scopes fails', async () => {
    const failed = new ApiError(new Response(null, { status: 503 }), {
      statusCode: 503,
      error: 'Service Unavailable',
      message: 'database unavailable',
    });
    const ctx = testContext({
      doc,
      api: { scopes: () => Promise.reject(failed) },
      me: principal({ org_role: 'member', scopes: ['decisions:read'] }),
    });
    await loadScopeChoices(ctx);
    configureCreateForm(ctx);
    expect(boxes().map((b) => [b.value, b.disabled, b.checked])).toEqual([
      ['decisions:read', false, true],
      ['decisions:write', true, false],
      ['ledger:admin', true, false],
    ]);
    expect(document.getElementById('scope-reason')!.textContent).toBe(
      'Your role (member) in this organisation cannot grant decisions:write, ledger:admin: your keys can have decisions:read. An owner or admin can change your role.',
    );
    expect((document.getElementById('key-name') as HTMLInputElement).maxLength).toBe(42);
    expect(document.getElementById('key-name-count')!.textContent).toBe('0 / 42');
    const expiries = [...(document.getElementById('key-expiry') as HTMLSelectElement).options];
    expect(expiries.filter((o) => !o.disabled).map((o) => o.value)).toEqual(['0', '7', '30', '90']);
  });

  it('disables nothing for a role that grants every scope, and sets no length the document does not give', async () => {
    const ctx = testContext({ doc: {}, api: { scopes: async () => ({ scopes: [] }) }, me: principal() });
    await loadScopeChoices(ctx);
    configureCreateForm(ctx);
    expect(boxes()).toHaveLength(0);
    expect(document.getElementById('scope-reason')!.hidden).toBe(true);
    expect(document.getElementById('key-name')!.hasAttribute('maxlength')).toBe(false);
    expect(document.getElementById('key-name-count')!.textContent).toBe('0');
  });
});
