// Which of its scopes a key used in the last 30 days (GET …/scope-usage?days=30): each scope's
// requests and last use, the ones unused, and "Narrow to what it uses" when some are unused. In a
// key's details, and in the org's key list (owners and admins).
import type { ScopeUsage } from '../../../../../packages/client/src/types.js';
import { me, type PageContext } from '../../context.js';
import { h, showAlert } from '../../dom.js';
import { handledElsewhere, isMissingRoute } from '../../errors.js';
import { timeCell } from '../../time.js';
import { isUsable, keyName, stateOf, type KeyRecord } from '../key-view.js';
import { openNarrow, type NarrowScope } from '../narrow-dialog.js';
import type { KeyDetailSection } from './details.js';

/** The period the page judges a scope unused over. */
export const SCOPE_USE_DAYS = 30;

const ROUTES: Record<NarrowScope, string> = {
  own: '/api-keys/{keyID}',
  org: '/orgs/{org_id}/api-keys/{keyID}',
};

/** The deployment's document lists the scope-usage route of this list. */
export const hasScopeUse = (ctx: PageContext, scope: NarrowScope) =>
  ctx.doc.hasRoute('get', `${ROUTES[scope]}/scope-usage`);

function fetchScopeUse(ctx: PageContext, key: KeyRecord, scope: NarrowScope): Promise<ScopeUsage> {
  const query = { days: SCOPE_USE_DAYS };
  return scope === 'org'
    ? ctx.api.orgs.keyScopeUsage(me(ctx).org_id, key.id, query)
    : ctx.api.keys.scopeUsage(key.id, query);
}

/** The usage, read: a line per scope, what went unused, and the narrowing action where it applies. */
export function scopeUseView(ctx: PageContext, key: KeyRecord, usage: ScopeUsage, scope: NarrowScope): HTMLElement[] {
  const name = keyName(key);
  const lines = usage.scopes.map((use) =>
    h(
      'li',
      { 'data-scope': use.scope },
      h('code', { text: use.scope }),
      ` ${use.requests} ${use.requests === 1 ? 'request' : 'requests'}`,
      use.last_used_at ? ', last ' : null,
      use.last_used_at ? timeCell(use.last_used_at, '') : null,
    ),
  );
  const unused = usage.unused;
  // Narrowing removes something and keeps something: a key of one scope has nothing to narrow.
  const canNarrow =
    unused.length > 0 && usage.scopes.length > 1 && isUsable(stateOf(key)) && ctx.doc.hasRoute('patch', ROUTES[scope]);
  const view: HTMLElement[] = [
    h('p', { class: 'facts-title', text: `Scopes used in the last ${usage.days} days` }),
    h('ul', { class: 'scope-use', 'aria-label': `Requests per scope of ${name}` }, ...lines),
    unused.length > 0
      ? h(
          'p',
          { class: 'scope-unused', 'data-unused': unused.join(' ') },
          `Unused for ${usage.days} days: `,
          ...unused.flatMap((s, i) => [i > 0 ? ', ' : '', h('code', { text: s })]),
        )
      : h('p', { class: 'muted', text: `Every scope it holds was used in the last ${usage.days} days.` }),
  ];
  if (canNarrow)
    view.push(
      h('button', {
        type: 'button',
        class: 'button secondary small',
        'aria-label': `Narrow to what it uses: ${name}`,
        text: 'Narrow to what it uses',
        onclick: (e: MouseEvent) => openNarrow(ctx, key, usage, e.currentTarget, scope),
      }),
    );
  return view;
}

/** Reads the key's scope usage into `slot` (a skeleton first; an error with "Try again" in place). */
export async function loadScopeUse(
  ctx: PageContext,
  key: KeyRecord,
  slot: HTMLElement,
  scope: NarrowScope,
): Promise<void> {
  slot.replaceChildren(h('div', { class: 'skeleton-line', 'aria-hidden': 'true' }));
  try {
    slot.replaceChildren(...scopeUseView(ctx, key, await fetchScopeUse(ctx, key, scope), scope));
  } catch (err) {
    if (handledElsewhere(err)) return;
    if (isMissingRoute(err))
      slot.replaceChildren(h('p', { class: 'muted', text: 'Scope usage is not available on this deployment.' }));
    else {
      const alert = h('div', { class: 'alert' });
      slot.replaceChildren(alert);
      showAlert(alert, err, () => void loadScopeUse(ctx, key, slot, scope));
    }
  }
}

/** The section of a key's details (the caller's own keys, usable ones, where the route exists). */
export const scopeUseSection: KeyDetailSection = {
  name: 'scopes',
  render: (ctx, _panel, key) =>
    isUsable(stateOf(key)) && hasScopeUse(ctx, 'own')
      ? h('div', { class: 'key-scope-use', 'data-scope-use-for': key.id })
      : null,
  load: (ctx, key, slot) => loadScopeUse(ctx, key, slot, 'own'),
};
