// "Create key": name (with a counter up to the service's maximum), scopes (the deployment's, with
// their descriptions; those your role cannot grant disabled, with the reason), expiry. The
// service decides: a 400 shows beside its field, anything else in the dialog.
import { me, refreshOrgPanels, type PageContext } from '../context.js';
import { closeDialog, openDialog } from '../dialogs.js';
import { byId, checkedValues, clearAlert, setFieldError, showAlert } from '../dom.js';
import { ApiError, errorMessage, errorStatus, handledElsewhere } from '../errors.js';
import { openReveal } from '../reveal.js';
import type { KeyRecord } from './key-view.js';
import { fillScopeChoices, tickDefaults } from './scopes.js';

const DEFAULT_EXPIRY = '90';

/** Fills the form for the signed-in principal: the deployment's scopes (GET /scopes), and its limits from its document. */
export function configureCreateForm(ctx: PageContext): void {
  fillScopeChoices(ctx, byId('create-scopes'), byId('scope-reason'), 'scope');
  const { max: nameMax } = ctx.doc.range('MintApiKeyRequest', 'name');
  const name = byId<HTMLInputElement>('key-name');
  if (nameMax !== undefined) name.maxLength = nameMax;
  else name.removeAttribute('maxlength');
  const { max: days } = ctx.doc.range('MintApiKeyRequest', 'expires_in_days');
  for (const option of byId<HTMLSelectElement>('key-expiry').options)
    option.hidden = option.disabled = days !== undefined && Number(option.value) > days;
  resetCreateForm(ctx);
}

function updateCounter(ctx: PageContext): void {
  const length = byId<HTMLInputElement>('key-name').value.length;
  const { max } = ctx.doc.range('MintApiKeyRequest', 'name');
  const counter = byId('key-name-count');
  counter.textContent = max === undefined ? String(length) : `${length} / ${max}`;
  counter.classList.toggle('near', max !== undefined && length >= max - 10);
}

function resetCreateForm(ctx: PageContext): void {
  byId<HTMLInputElement>('key-name').value = '';
  updateCounter(ctx);
  tickDefaults(document.querySelectorAll<HTMLInputElement>('input[name="scope"]'));
  byId<HTMLSelectElement>('key-expiry').value = DEFAULT_EXPIRY;
  clearCreateErrors();
}

function clearCreateErrors(): void {
  setFieldError('key-name-error', byId('key-name'), '');
  setFieldError('scopes-error', null, '');
  setFieldError('key-expiry-error', byId('key-expiry'), '');
  clearAlert(byId('create-error'));
}

export function openCreate(ctx: PageContext, trigger: HTMLElement | null): void {
  resetCreateForm(ctx);
  openDialog(byId<HTMLDialogElement>('create-dialog'), trigger);
  byId('key-name').focus();
}

/** A 400's message starts with the field it is about: [field, error element, input]. */
const FIELD_OF_MESSAGE: [string, string, string | null][] = [
  ['name', 'key-name-error', 'key-name'],
  ['scopes', 'scopes-error', null],
  ['expires_in_days', 'key-expiry-error', 'key-expiry'],
];

async function onCreate(ctx: PageContext, event: Event): Promise<void> {
  event.preventDefault();
  const panel = ctx.panels.keys;
  if (!ctx.session.me || !panel?.enabled) return;
  clearCreateErrors();
  const scopes = checkedValues('scope') as never[];
  const submit = byId<HTMLButtonElement>('create-submit');
  submit.disabled = true;
  submit.textContent = 'Creating…';
  try {
    const minted = await ctx.api.keys.mint({
      org_id: me(ctx).org_id,
      name: byId<HTMLInputElement>('key-name').value,
      expires_in_days: Number(byId<HTMLSelectElement>('key-expiry').value),
      ...(scopes.length > 0 ? { scopes } : {}),
    });
    const { key, ...record } = minted;
    panel.put(record as KeyRecord);
    closeDialog(byId<HTMLDialogElement>('create-dialog'));
    openReveal(key, record, 'created', () => panel.focusRow(record.id));
    void refreshOrgPanels(ctx);
  } catch (err) {
    if (handledElsewhere(err)) return;
    const message = errorMessage(err);
    const field =
      err instanceof ApiError && err.status === 400 && FIELD_OF_MESSAGE.find(([f]) => message.startsWith(f));
    if (field) {
      const [, errorId, inputId] = field;
      setFieldError(errorId, inputId ? byId(inputId) : null, message);
      (inputId ? byId(inputId) : document.querySelector<HTMLElement>('input[name="scope"]'))?.focus();
      return;
    }
    if (errorStatus(err) === 501) {
      byId<HTMLDialogElement>('create-dialog').close();
      panel.setEnabled(false, err);
      return;
    }
    showAlert(byId('create-error'), err);
    byId('create-error').focus();
  } finally {
    submit.textContent = 'Create key';
    submit.disabled = !panel.enabled;
  }
}

export function initCreateDialog(ctx: PageContext): void {
  const open = (e: Event) => openCreate(ctx, e.currentTarget as HTMLElement);
  byId('create-open').addEventListener('click', open);
  byId('empty-create').addEventListener('click', open);
  byId('create-form').addEventListener('submit', (e) => void onCreate(ctx, e));
  byId('create-cancel').addEventListener('click', () => byId<HTMLDialogElement>('create-dialog').close());
  byId('key-name').addEventListener('input', () => updateCounter(ctx));
}
