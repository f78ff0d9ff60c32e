import { beforeEach, describe, expect, it } from 'vitest';
import { loadPage, principal, testContext } from '../test/page.js';
import { configureCreateForm } from './create-dialog.js';

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

describe('the create dialog', () => {
  beforeEach(loadPage);

  it('offers the scopes, name length and expiries of the service’s document, not its own', () => {
    configureCreateForm(testContext({ doc, me: principal({ org_role: 'member', scopes: ['decisions:read'] }) }));
    const boxes = [...document.querySelectorAll<HTMLInputElement>('input[name="scope"]')];
    expect(boxes.map((b) => [b.value, b.disabled, b.checked])).toEqual([
      ['decisions:read', false, true],
      ['decisions:write', true, false],
      ['ledger:admin', true, false],
    ]);
    expect(boxes[1]!.getAttribute('aria-describedby')).toBe('scope-reason');
    expect(document.getElementById('scope-reason')!.textContent).toBe(
      'Your role (member) in this organisation cannot grant decisions:write, ledger:admin: your keys can have decisions:read. An owner or admin can change your role.',
    );
    expect(document.getElementById('scope-reason')!.hidden).toBe(false);
    expect((document.getElementById('key-name') as HTMLInputElement).maxLength).toBe(42);
    expect(document.getElementById('key-name-count')!.textContent).toBe('0 / 42');
    const expiries = [...(document.getElementById('key-expiry') as HTMLSelectElement).options];
    expect(expiries.filter((o) => !o.disabled).map((o) => o.value)).toEqual(['0', '7', '30', '90']);
  });

  it('disables nothing for a role that grants every scope, and sets no length the document does not give', () => {
    configureCreateForm(testContext({ doc: {}, me: principal() }));
    expect(document.querySelectorAll('input[name="scope"]')).toHaveLength(0);
    expect(document.getElementById('scope-reason')!.hidden).toBe(true);
    expect(document.getElementById('key-name')!.hasAttribute('maxlength')).toBe(false);
    expect(document.getElementById('key-name-count')!.textContent).toBe('0');
  });
});
