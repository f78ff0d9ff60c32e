// Service keys: keys the organisation owns (they keep working when the person who created them
// leaves), for owners and admins: create with the one-time reveal, list, rotate, revoke.
import type { ServiceKeyList, MintServiceKeyRequest, ServiceKey } from '../../../../packages/client/src/types.js';
import { me, personName, type PageContext } from '../context.js';
import { byId, checkedValues, clearAlert, h, showAlert } from '../dom.js';
import { handledElsewhere } from '../errors.js';
import { openRevoke, openRotate } from '../keys/key-dialogs.js';
import { keyBadge, keyName, maskedKey, stateOf } from '../keys/key-view.js';
import { PAGE_SIZE } from '../keys/keys-panel.js';
import { fillScopeChoices, tickDefaults } from '../keys/scopes.js';
import { openReveal } from '../reveal.js';
import { timeCell } from '../time.js';
import { hiddenHeader, pagedTable } from './admin-list.js';

/** Who minted a service key: you, a member's e-mail, "a former member", or the operator (none). */
const creatorName = (ctx: PageContext, key: ServiceKey) =>
  key.created_by ? personName(ctx, key.created_by, 'a former member') : 'the operator';

function serviceKeyRow(ctx: PageContext, key: ServiceKey): HTMLElement {
  const badge = keyBadge(key);
  const name = keyName(key);
  const state = stateOf(key);
  return h(
    'tr',
    { 'data-service-key-id': key.id, 'data-status': state },
    h('th', { scope: 'row', 'data-label': 'Name', tabindex: '-1' }, h('span', { class: 'name-text', text: name })),
    h('td', { 'data-label': 'Created by', text: creatorName(ctx, key) }),
    h('td', { 'data-label': 'Key' }, h('code', { class: 'masked-key', text: maskedKey(key) })),
    h(
      'td',
      { 'data-label': 'Status' },
      h('span', { class: `badge status ${badge.variant}`, title: badge.title, text: badge.text }),
    ),
    h('td', { 'data-label': 'Last used' }, timeCell(key.last_used_at, 'Never')),
    h(
      'td',
      { 'data-label': 'Actions', class: 'cell-actions' },
      state === 'active'
        ? h('button', {
            type: 'button',
            class: 'button secondary small',
            'aria-label': `Rotate service key ${name}`,
            text: 'Rotate',
            onclick: (e: MouseEvent) => openRotate(ctx, key, e.currentTarget, 'service'),
          })
        : null,
      state === 'revoked'
        ? null
        : h('button', {
            type: 'button',
            class: 'button danger small',
            'aria-label': `Revoke service key ${name}`,
            text: 'Revoke',
            onclick: (e: MouseEvent) => openRevoke(ctx, key, e.currentTarget, 'service'),
          }),
    ),
  );
}

export const serviceKeysList = (ctx: PageContext) =>
  pagedTable<ServiceKeyList>(ctx, {
    section: 'service-keys',
    emptyText: () => 'No service keys yet.',
    fetch: (cursor) => ctx.api.serviceKeys.list(me(ctx).org_id, { limit: PAGE_SIZE, ...(cursor ? { cursor } : {}) }),
    rows: (data) => data.keys.map((key) => serviceKeyRow(ctx, key)),
    caption: 'Service keys of this organisation',
    headers: ['Name', 'Created by', 'Key', 'Status', 'Last used', hiddenHeader('Actions')],
  });

/** The create form's scopes: the deployment's, those the caller's role cannot grant disabled with the reason. */
export function configureServiceKeyForm(ctx: PageContext): void {
  tickDefaults(fillScopeChoices(ctx, byId('service-key-scopes'), byId('service-scope-reason'), 'service-scope'));
  const { max } = ctx.doc.range('MintServiceKeyRequest', 'name');
  const name = byId<HTMLInputElement>('service-key-name');
  if (max !== undefined) name.maxLength = max;
  else name.removeAttribute('maxlength');
}

async function onCreate(ctx: PageContext, event: Event): Promise<void> {
  event.preventDefault();
  const submit = byId<HTMLButtonElement>('service-key-submit');
  const scopes = checkedValues('service-scope') as MintServiceKeyRequest['scopes'];
  const body: MintServiceKeyRequest = { name: byId<HTMLInputElement>('service-key-name').value };
  if (scopes && scopes.length > 0) body.scopes = scopes;
  clearAlert(byId('service-keys-error'));
  submit.disabled = true;
  try {
    const { key, ...record } = await ctx.api.serviceKeys.mint(me(ctx).org_id, body);
    byId<HTMLInputElement>('service-key-name').value = '';
    await Promise.all([ctx.panels.serviceKeys?.load(), ctx.panels.orgKeys?.load()]);
    openReveal(key, record, 'created', () => ctx.panels.keys?.focusRow(record.id));
  } catch (err) {
    if (handledElsewhere(err)) return;
    showAlert(byId('service-keys-error'), err);
    byId('service-keys-error').focus();
  } finally {
    submit.disabled = false;
  }
}

export function initServiceKeyForm(ctx: PageContext): void {
  byId('service-key-form').addEventListener('submit', (e) => void onCreate(ctx, e));
}
