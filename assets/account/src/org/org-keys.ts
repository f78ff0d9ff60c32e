// Every key in the organisation with who minted it, for owners and admins: revoke, enable a disabled
// key, and each key's scope use of the last 30 days with "Narrow to what it uses" (opened under its row).
import type { OrgApiKeyList, OrgApiKey } from '../../../../packages/client/src/types.js';
import { me, type PageContext } from '../context.js';
import { announce, h } from '../dom.js';
import { describeError, handledElsewhere } from '../errors.js';
import { hasScopeUse, loadScopeUse } from '../keys/details/scope-use.js';
import { openRevoke } from '../keys/key-dialogs.js';
import { keyBadge, keyName, maskedKey, stateOf } from '../keys/key-view.js';
import { PAGE_SIZE } from '../keys/keys-panel.js';
import { adminControls, adminLabel, CONTROL_LABELS } from '../keys/set-by.js';
import { timeCell } from '../time.js';
import { hiddenHeader, pagedTable } from './admin-list.js';

export function orgKeyRow(ctx: PageContext, key: OrgApiKey): HTMLElement {
  const badge = keyBadge(key);
  const email = key.owner_email ?? ctx.session.members.get(key.user_id) ?? key.user_id;
  const owner = key.owner_status === 'removed' ? `${email} (no longer a member)` : email;
  return h(
    'tr',
    { 'data-org-key-id': key.id, 'data-status': stateOf(key) },
    h(
      'th',
      { scope: 'row', 'data-label': 'Name', tabindex: '-1' },
      h('span', { class: 'name-text', text: keyName(key) }),
    ),
    h('td', { 'data-label': 'Minted by', text: owner }),
    h('td', { 'data-label': 'Key' }, h('code', { class: 'masked-key', text: maskedKey(key) })),
    h(
      'td',
      { 'data-label': 'Status' },
      h('span', { class: `badge status ${badge.variant}`, title: badge.title, text: badge.text }),
      ...setByAdmins(key),
    ),
    h('td', { 'data-label': 'Last used' }, timeCell(key.last_used_at, 'Never')),
    h(
      'td',
      { 'data-label': 'Actions', class: 'cell-actions' },
      // Through the org's route: an owner or admin enables any key of the org, one an admin disabled too.
      stateOf(key) === 'disabled'
        ? h('button', {
            type: 'button',
            class: 'button small',
            'aria-label': `Enable ${keyName(key)} (minted by ${owner})`,
            text: 'Enable',
            onclick: (e: MouseEvent) => void enableKey(ctx, key, e.currentTarget as HTMLButtonElement),
          })
        : null,
      stateOf(key) === 'revoked'
        ? null
        : h('button', {
            type: 'button',
            class: 'button danger small',
            'aria-label': `Revoke ${keyName(key)} (minted by ${owner})`,
            text: 'Revoke',
            onclick: (e: MouseEvent) => openRevoke(ctx, key, e.currentTarget, 'org'),
          }),
    ),
  );
}

async function enableKey(ctx: PageContext, key: OrgApiKey, button: HTMLButtonElement): Promise<void> {
  button.disabled = true;
  try {
    await ctx.api.orgs.updateKey(me(ctx).org_id, key.id, { enabled: true });
    announce(`Key ${keyName(key)} enabled.`);
    const p = ctx.panels;
    await Promise.all([p.orgKeys?.load(), p.keys?.load(), p.audit?.load()]);
  } catch (err) {
    button.disabled = false;
    if (handledElsewhere(err)) return;
    const { title, detail } = describeError(err);
    announce(`${title} ${detail}`.trim(), { error: true });
  }
}

/**
 * Beside the state, the controls an admin set, each with its label: "Disabled" is the state's badge
 * itself, the others (whose values this list does not show) are named, one a line.
 */
function setByAdmins(key: OrgApiKey): Node[] {
  const controls = adminControls(key);
  const others = controls.filter((c) => c !== 'enabled');
  // A revoked or expired key's badge is not "Disabled": the label would speak of another state.
  const disabledByAdmin = controls.includes('enabled') && stateOf(key) === 'disabled';
  return [
    ...(disabledByAdmin ? [document.createTextNode(' '), adminLabel()] : []),
    ...others.map((c) => h('span', { class: 'set-by-control' }, CONTROL_LABELS[c], ' ', adminLabel())),
  ];
}

/** Keys whose scope use is open under their row (they stay open when the list reloads). */
const openScopeUse = new Set<string>();

/** The key's row and, where the deployment has the route, its scope use under it behind a "Scopes" toggle. */
export function orgKeyRows(ctx: PageContext, key: OrgApiKey): HTMLElement[] {
  const row = orgKeyRow(ctx, key);
  if (!hasScopeUse(ctx, 'org')) return [row];
  const id = `org-scope-use-${key.id}`;
  const slot = h('div', { class: 'key-scope-use', 'data-scope-use-for': key.id });
  const open = () => openScopeUse.has(key.id);
  const details = h('tr', { class: 'details-row', id, hidden: !open() }, h('td', { colspan: '6' }, slot));
  const toggle = h('button', {
    type: 'button',
    class: 'button ghost small',
    'aria-expanded': String(open()),
    'aria-controls': id,
    'aria-label': `Scopes of ${keyName(key)}`,
    text: 'Scopes',
    onclick: () => {
      if (open()) openScopeUse.delete(key.id);
      else openScopeUse.add(key.id);
      toggle.setAttribute('aria-expanded', String(open()));
      details.hidden = !open();
      if (open()) void loadScopeUse(ctx, key, slot, 'org');
    },
  });
  row.querySelector('.cell-actions')!.prepend(toggle);
  if (open()) void loadScopeUse(ctx, key, slot, 'org');
  return [row, details];
}

export const orgKeysList = (ctx: PageContext) =>
  pagedTable<OrgApiKeyList>(ctx, {
    section: 'org-keys',
    emptyText: () => 'No keys in this organisation yet.',
    fetch: (cursor) => ctx.api.orgs.keys(me(ctx).org_id, { limit: PAGE_SIZE, ...(cursor ? { cursor } : {}) }),
    rows: (data) => data.keys.flatMap((key) => orgKeyRows(ctx, key)),
    caption: 'Every key in this organisation',
    headers: ['Name', 'Minted by', 'Key', 'Status', 'Last used', hiddenHeader('Actions')],
  });
