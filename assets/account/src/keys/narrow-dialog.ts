// "Narrow to what it uses": a preview of the scopes a key keeps (ticked: the ones it used in the
// period; offered: only the ones it holds, so it is never widened), how many of the period's
// requests the chosen set would have refused, per scope it removes, then the PATCH with `scopes`.
// Never an empty set: the service refuses it (400), and the preview says so before asking.
import type { ScopeUsage } from '../../../../packages/client/src/types.js';
import { me, refreshOrgPanels, type PageContext } from '../context.js';
import { closeDialog, openDialog } from '../dialogs.js';
import { announce, byId, checkedValues, clearAlert, h, setFieldError, showAlert } from '../dom.js';
import { handledElsewhere } from '../errors.js';
import { relativeTime } from '../time.js';
import { keyName, type KeyRecord } from './key-view.js';
import { scopeChecks } from './scopes.js';

/** Whose list the key is in: the caller's own, or the org's (owners and admins). */
export type NarrowScope = 'own' | 'org';

interface Target {
  ctx: PageContext;
  key: KeyRecord;
  usage: ScopeUsage;
  scope: NarrowScope;
}

/** The key the open preview acts on. */
let target: Target | null = null;

const BOXES = 'narrow-scope';
/** The service refuses `scopes: []` (400); the preview says so first. */
export const EMPTY_SET = 'Keep at least one scope. To take every scope away, revoke the key.';
const plural = (n: number, one: string) => `${n} ${n === 1 ? one : `${one}s`}`;

/** The scopes the key used in the period: what it holds minus what the service says it did not use. */
export const usedScopes = (usage: ScopeUsage): string[] =>
  usage.scopes.filter((s) => !usage.unused.includes(s.scope)).map((s) => s.scope);

export interface Refusals {
  /** Requests of the period that the chosen set would have refused. */
  total: number;
  /** Each scope the set removes, with its requests in the period. */
  removed: { scope: string; requests: number }[];
}

/** What keeping only `keep` would have refused in the period: the requests of each scope it removes. */
export function refusedBy(usage: ScopeUsage, keep: readonly string[]): Refusals {
  const removed = usage.scopes
    .filter((s) => !keep.includes(s.scope))
    .map(({ scope, requests }) => ({ scope, requests }));
  return { total: removed.reduce((sum, s) => sum + s.requests, 0), removed };
}

/** "12 requests, last 3 hours ago" or "not used in 30 days", beside each scope. */
function useText(use: ScopeUsage['scopes'][number], days: number): string {
  if (use.requests === 0) return `not used in ${days} days`;
  const last = use.last_used_at ? `, last ${relativeTime(use.last_used_at)}` : '';
  return `${plural(use.requests, 'request')}${last}`;
}

/** The preview's verdict on the ticked set: the empty-set message, the confirm button, the refusals. */
function update(): void {
  if (!target) return;
  const { usage } = target;
  const keep = checkedValues(BOXES, byId('narrow-scopes'));
  const empty = keep.length === 0;
  const { total, removed } = refusedBy(usage, keep);
  setFieldError('narrow-empty', null, empty ? EMPTY_SET : '');
  byId<HTMLButtonElement>('narrow-confirm').disabled = empty || removed.length === 0;
  const impact = byId('narrow-impact');
  if (empty) impact.replaceChildren();
  else if (removed.length === 0)
    impact.replaceChildren(h('p', { text: 'Every scope is kept: nothing would change. Untick one to remove it.' }));
  else
    impact.replaceChildren(
      h('p', {
        'data-refused': String(total),
        text:
          total === 0
            ? `With these scopes, no request of the last ${usage.days} days would have been refused.`
            : `With these scopes, ${plural(total, 'request')} of the last ${usage.days} days would have been refused.`,
      }),
      h(
        'ul',
        { class: 'narrow-removed', 'aria-label': 'Scopes removed' },
        ...removed.map(({ scope, requests }) =>
          h(
            'li',
            { 'data-scope': scope },
            'Removes ',
            h('code', { text: scope }),
            `: ${plural(requests, 'request')} refused`,
          ),
        ),
      ),
    );
}

/** Opens the preview for a key and its scope usage (from the page's last read of it). */
export function openNarrow(
  ctx: PageContext,
  key: KeyRecord,
  usage: ScopeUsage,
  trigger: EventTarget | null,
  scope: NarrowScope = 'own',
): void {
  target = { ctx, key, usage, scope };
  const name = keyName(key);
  const used = usedScopes(usage);
  byId('narrow-title').textContent = `Narrow “${name}” to what it uses`;
  byId('narrow-text').textContent =
    `In the last ${usage.days} days “${name}” used ${used.length ? used.join(', ') : 'none of its scopes'}. ` +
    'A scope you remove stops working at once, everywhere. A key is never widened: for more scopes, create a new key.';
  const choices = usage.scopes.map((use) => ({
    scope: use.scope,
    description: useText(use, usage.days),
    grantable: true,
  }));
  const boxes = byId('narrow-scopes');
  boxes.replaceChildren(...scopeChecks(BOXES, choices, ''));
  for (const box of boxes.querySelectorAll<HTMLInputElement>('input')) box.checked = used.includes(box.value);
  clearAlert(byId('narrow-error'));
  update();
  openDialog(byId<HTMLDialogElement>('narrow-dialog'), trigger as HTMLElement | null);
  boxes.querySelector<HTMLInputElement>('input')?.focus();
}

async function narrow(ctx: PageContext, key: KeyRecord, scope: NarrowScope, scopes: string[]): Promise<KeyRecord> {
  const record =
    scope === 'org'
      ? await ctx.api.orgs.updateKey(me(ctx).org_id, key.id, { scopes })
      : await ctx.api.keys.update(key.id, { scopes });
  return { ...key, ...record } as KeyRecord;
}

async function confirmNarrow(event: Event): Promise<void> {
  event.preventDefault();
  const button = byId<HTMLButtonElement>('narrow-confirm');
  if (!target || button.disabled) return;
  const { ctx, key, scope } = target;
  const keep = checkedValues(BOXES, byId('narrow-scopes'));
  if (keep.length === 0) return update();
  clearAlert(byId('narrow-error'));
  button.disabled = true;
  button.textContent = 'Narrowing…';
  try {
    const record = await narrow(ctx, key, scope, keep);
    closeDialog(byId<HTMLDialogElement>('narrow-dialog'));
    target = null;
    announce(`Key ${keyName(key)} now holds only ${record.scopes.join(', ')}.`);
    if (scope === 'own') {
      ctx.panels.keys?.put(record);
      ctx.panels.keys?.focusRow(key.id);
      void refreshOrgPanels(ctx);
      return;
    }
    const p = ctx.panels;
    await Promise.all([p.orgKeys?.load(), p.keys?.load(), p.audit?.load()]);
    const row = document.querySelector<HTMLElement>(`tr[data-org-key-id="${CSS.escape(key.id)}"] th`);
    (row ?? byId('org-keys-title')).focus();
  } catch (err) {
    if (handledElsewhere(err)) return;
    showAlert(byId('narrow-error'), err);
    byId('narrow-error').focus();
  } finally {
    button.textContent = 'Narrow key';
    if (target) update();
  }
}

export function initNarrowDialog(): void {
  byId('narrow-form').addEventListener('submit', (e) => void confirmNarrow(e));
  byId('narrow-scopes').addEventListener('change', update);
  byId('narrow-cancel').addEventListener('click', () => byId<HTMLDialogElement>('narrow-dialog').close());
}
