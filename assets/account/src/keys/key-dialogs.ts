// Revoke (type the key's name to confirm) and Rotate (choose the grace period, then the reveal),
// for the caller's own keys, any key of the org (owners and admins) and the org's service keys.
import { me, refreshOrgPanels, type PageContext } from '../context.js';
import { closeDialog, openDialog } from '../dialogs.js';
import { announce, byId, clearAlert, show, showAlert } from '../dom.js';
import { handledElsewhere } from '../errors.js';
import { openReveal } from '../reveal.js';
import { keyName, maskedKey, type KeyRecord } from './key-view.js';

/** Whose list the key is in: the caller's own, the org's (admin view), or the org's service keys. */
export type KeyScope = 'own' | 'org' | 'service';

interface Target {
  ctx: PageContext;
  key: KeyRecord;
  scope: KeyScope;
}

/** The key the open dialog acts on (one dialog is open at a time). */
let target: Target | null = null;

export function openRevoke(ctx: PageContext, key: KeyRecord, trigger: EventTarget | null, scope: KeyScope = 'own') {
  target = { ctx, key, scope };
  byId('revoke-text').textContent =
    `“${keyName(key)}” (${maskedKey(key)}) will stop working immediately: programs using it will be refused. This cannot be undone.`;
  const needsName = Boolean(key.name);
  show(byId('revoke-name-field'), needsName);
  byId('revoke-name-label').textContent = `Type “${key.name}” to confirm`;
  byId<HTMLInputElement>('revoke-name').value = '';
  clearAlert(byId('revoke-error'));
  byId<HTMLButtonElement>('revoke-confirm').disabled = needsName;
  openDialog(byId<HTMLDialogElement>('revoke-dialog'), trigger as HTMLElement | null);
  byId(needsName ? 'revoke-name' : 'revoke-cancel').focus();
}

async function revoke(ctx: PageContext, key: KeyRecord, scope: KeyScope): Promise<void> {
  const orgId = me(ctx).org_id;
  if (scope === 'org') await ctx.api.orgs.revokeKey(orgId, key.id);
  else if (scope === 'service') await ctx.api.serviceKeys.revoke(orgId, key.id);
  else await ctx.api.keys.revoke(key.id);
}

async function confirmRevoke(event: Event): Promise<void> {
  event.preventDefault();
  const button = byId<HTMLButtonElement>('revoke-confirm');
  if (!target || button.disabled) return;
  const { ctx, key, scope } = target;
  button.disabled = true;
  button.textContent = 'Revoking…';
  try {
    await revoke(ctx, key, scope);
    closeDialog(byId<HTMLDialogElement>('revoke-dialog'));
    announce(`Key ${keyName(key)} revoked. It no longer works.`);
    if (scope === 'own') {
      await ctx.panels.keys?.afterRevoke(key.id);
      void refreshOrgPanels(ctx);
      return;
    }
    const p = ctx.panels;
    await Promise.all([p.orgKeys?.load(), p.serviceKeys?.load(), p.keys?.load(), p.audit?.load()]);
    byId(scope === 'org' ? 'org-keys-title' : 'service-keys-title').focus();
  } catch (err) {
    if (!handledElsewhere(err)) showAlert(byId('revoke-error'), err);
  } finally {
    button.disabled = false;
    button.textContent = 'Revoke key';
  }
}

/** The grace periods offered, within the service's maximum (from its document; all when it says none). */
function fillGraceOptions(ctx: PageContext): void {
  const { max } = ctx.doc.range('RotateApiKeyRequest', 'grace_period_seconds');
  for (const option of byId<HTMLSelectElement>('rotate-grace').options)
    option.hidden = option.disabled = max !== undefined && Number(option.value) > max;
}

export function openRotate(ctx: PageContext, key: KeyRecord, trigger: EventTarget | null, scope: KeyScope = 'own') {
  target = { ctx, key, scope };
  byId('rotate-text').textContent =
    `“${keyName(key)}” gets a new secret, shown once. The current secret keeps working for the grace period you choose, then stops.`;
  fillGraceOptions(ctx);
  byId<HTMLSelectElement>('rotate-grace').value = '86400';
  clearAlert(byId('rotate-error'));
  openDialog(byId<HTMLDialogElement>('rotate-dialog'), trigger as HTMLElement | null);
  byId('rotate-grace').focus();
}

async function confirmRotate(event: Event): Promise<void> {
  event.preventDefault();
  if (!target) return;
  const { ctx, key, scope } = target;
  const button = byId<HTMLButtonElement>('rotate-confirm');
  button.disabled = true;
  button.textContent = 'Rotating…';
  try {
    const body = { grace_period_seconds: Number(byId<HTMLSelectElement>('rotate-grace').value) };
    const rotated =
      scope === 'service'
        ? await ctx.api.serviceKeys.rotate(me(ctx).org_id, key.id, body)
        : await ctx.api.keys.rotate(key.id, body);
    const { key: secret, ...record } = rotated;
    const merged = { ...key, ...record } as KeyRecord;
    if (scope === 'service') await ctx.panels.serviceKeys?.load();
    else ctx.panels.keys?.put(merged);
    closeDialog(byId<HTMLDialogElement>('rotate-dialog'));
    openReveal(secret, merged, 'rotated', () => ctx.panels.keys?.focusRow(key.id));
    if (scope !== 'service') void refreshOrgPanels(ctx);
  } catch (err) {
    if (!handledElsewhere(err)) showAlert(byId('rotate-error'), err);
  } finally {
    button.disabled = false;
    button.textContent = 'Rotate key';
  }
}

export function initKeyDialogs(): void {
  byId('revoke-form').addEventListener('submit', (e) => void confirmRevoke(e));
  byId('revoke-name').addEventListener('input', () => {
    byId<HTMLButtonElement>('revoke-confirm').disabled =
      !target || byId<HTMLInputElement>('revoke-name').value.trim() !== (target.key.name ?? '').trim();
  });
  byId('revoke-cancel').addEventListener('click', () => byId<HTMLDialogElement>('revoke-dialog').close());
  byId('rotate-form').addEventListener('submit', (e) => void confirmRotate(e));
  byId('rotate-cancel').addEventListener('click', () => byId<HTMLDialogElement>('rotate-dialog').close());
}
