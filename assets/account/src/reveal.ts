// The one-time reveal of a new key or secret. The key is forgotten (out of the DOM and out of
// every variable) in the same task the dialog closes, whichever way it closes.
import { announce, byId, h, show } from './dom.js';
import { relativeTime } from './time.js';
import { keyName } from './keys/key-view.js';

interface Revealed {
  name: string;
  scopes: string[];
  expires_at?: string | null;
}

function lookUp() {
  return {
    dialog: byId<HTMLDialogElement>('reveal-dialog'),
    slot: byId('reveal-slot'),
    title: byId('reveal-title'),
    summary: byId('reveal-summary'),
    copiedNote: byId('reveal-copied'),
    copy: byId('reveal-copy'),
    confirm: byId('reveal-confirm'),
    actions: byId('reveal-actions'),
    keep: byId('reveal-keep'),
    discard: byId('reveal-discard'),
    close: byId('reveal-close'),
  };
}

/** The dialog's elements, looked up once by initReveal(). */
let el: ReturnType<typeof lookUp>;
let copied = false;
let copiedTimer: ReturnType<typeof setTimeout> | undefined;
/** Where focus goes once the reveal closes (the key's row); null once forgotten. */
let afterClose: (() => void) | null = null;

export function openReveal(key: string, record: Revealed, how: 'created' | 'rotated', focusAfter: () => void): void {
  afterClose = focusAfter;
  copied = false;
  // A read-only textarea: the whole key stays visible (it wraps) and selectable on any screen.
  const field = h('textarea', {
    id: 'reveal-key',
    class: 'reveal-key',
    rows: '2',
    readonly: true,
    autocomplete: 'off',
    autocapitalize: 'off',
    spellcheck: 'false',
    'aria-describedby': 'reveal-warning',
  });
  field.value = key;
  el.slot.replaceChildren(field);
  const expiry = record.expires_at ? `expires ${relativeTime(record.expires_at)}` : 'never expires';
  el.title.textContent = how === 'rotated' ? 'Save the new secret' : 'Save your new key';
  el.summary.textContent = `${keyName(record)} · ${record.scopes.join(', ')} · ${expiry}`;
  el.copiedNote.textContent = '';
  el.copy.textContent = 'Copy';
  show(el.confirm, false);
  show(el.actions, true);
  el.dialog.showModal();
  // Size the field to the key once it is laid out (the dialog's width depends on the screen).
  const line = parseFloat(getComputedStyle(field).lineHeight || '20') || 20;
  field.rows = Math.max(2, Math.ceil(field.scrollHeight / line));
  el.copy.focus();
  announce(
    how === 'rotated'
      ? `Key ${keyName(record)} rotated. Copy the new secret now: it is shown only once.`
      : `Key ${keyName(record)} created. Copy it now: it is shown only once.`,
  );
}

async function copyKey(): Promise<void> {
  const input = document.getElementById('reveal-key') as HTMLTextAreaElement | null;
  if (!input) return;
  let done = false;
  if (navigator.clipboard && window.isSecureContext) {
    try {
      await navigator.clipboard.writeText(input.value);
      done = true;
    } catch {
      done = false;
    }
  }
  if (!done) {
    // Older browsers and plain-HTTP origins: copy the selected text of the read-only field.
    input.focus();
    input.select();
    try {
      done = document.execCommand('copy');
    } catch {
      done = false;
    }
  }
  const button = el.copy;
  const status = el.copiedNote;
  clearTimeout(copiedTimer);
  if (done) {
    copied = true;
    button.textContent = 'Copied';
    status.textContent = 'The key is on your clipboard.';
    copiedTimer = setTimeout(() => {
      button.textContent = 'Copy';
    }, 2500);
  } else {
    input.focus();
    input.select();
    status.textContent = 'Could not copy automatically: the key is selected, press Ctrl+C (or ⌘C) to copy it.';
  }
}

/** Done or Escape: closes once the key was copied; otherwise asks first. */
function requestClose(): void {
  if (copied) {
    closeReveal();
    return;
  }
  show(el.actions, false);
  show(el.confirm, true);
  el.keep.focus();
  announce('You have not copied the key. Once closed it cannot be shown again. Close anyway?');
}

function keepOpen(): void {
  show(el.confirm, false);
  show(el.actions, true);
  el.copy.focus();
}

/**
 * Closes the reveal and forgets the key in the same task. The dialog's 'close' event comes a
 * task later (the browser queues it), so waiting for it would leave the key in a closed dialog's field.
 */
function closeReveal(): void {
  const focus = forget();
  const dialog = el.dialog;
  if (dialog.open) dialog.close();
  focus?.();
}

/** Empties the reveal; returns where focus goes, once (null when the key was already forgotten). */
function forget(): (() => void) | null {
  clearTimeout(copiedTimer);
  const input = document.getElementById('reveal-key') as HTMLTextAreaElement | null;
  if (input) input.value = '';
  el.slot.replaceChildren();
  el.summary.textContent = '';
  el.copiedNote.textContent = '';
  el.copy.textContent = 'Copy';
  show(el.confirm, false);
  show(el.actions, true);
  copied = false;
  const focus = afterClose;
  afterClose = null;
  return focus;
}

export function initReveal(): void {
  el = lookUp();
  const dialog = el.dialog;
  el.copy.addEventListener('click', () => void copyKey());
  el.close.addEventListener('click', requestClose);
  el.keep.addEventListener('click', keepOpen);
  el.discard.addEventListener('click', closeReveal);
  // A close that did not go through closeReveal() forgets the key too.
  dialog.addEventListener('close', () => forget()?.());
  // Escape asks first, like Done (the browser would otherwise close the dialog at once).
  dialog.addEventListener('keydown', (e) => {
    if (e.key !== 'Escape') return;
    e.preventDefault();
    if (el.confirm.hidden) requestClose();
    else keepOpen();
  });
  // Any other close request (the browser's own cancel): the same path, so the key is forgotten at once.
  dialog.addEventListener('cancel', (e) => {
    e.preventDefault();
    requestClose();
  });
}
