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
  byId('reveal-slot').replaceChildren(field);
  const expiry = record.expires_at ? `expires ${relativeTime(record.expires_at)}` : 'never expires';
  byId('reveal-title').textContent = how === 'rotated' ? 'Save the new secret' : 'Save your new key';
  byId('reveal-summary').textContent = `${keyName(record)} · ${record.scopes.join(', ')} · ${expiry}`;
  byId('reveal-copied').textContent = '';
  byId('reveal-copy').textContent = 'Copy';
  show(byId('reveal-confirm'), false);
  show(byId('reveal-actions'), true);
  byId<HTMLDialogElement>('reveal-dialog').showModal();
  // Size the field to the key once it is laid out (the dialog's width depends on the screen).
  const line = parseFloat(getComputedStyle(field).lineHeight || '20') || 20;
  field.rows = Math.max(2, Math.ceil(field.scrollHeight / line));
  byId('reveal-copy').focus();
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
  const button = byId('reveal-copy');
  const status = byId('reveal-copied');
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
  show(byId('reveal-actions'), false);
  show(byId('reveal-confirm'), true);
  byId('reveal-keep').focus();
  announce('You have not copied the key. Once closed it cannot be shown again. Close anyway?');
}

function keepOpen(): void {
  show(byId('reveal-confirm'), false);
  show(byId('reveal-actions'), true);
  byId('reveal-copy').focus();
}

/**
 * Closes the reveal and forgets the key in the same task. The dialog's 'close' event comes a
 * task later (the browser queues it), so waiting for it would leave the key in a closed dialog's field.
 */
function closeReveal(): void {
  const focus = forget();
  const dialog = byId<HTMLDialogElement>('reveal-dialog');
  if (dialog.open) dialog.close();
  focus?.();
}

/** Empties the reveal; returns where focus goes, once (null when the key was already forgotten). */
function forget(): (() => void) | null {
  clearTimeout(copiedTimer);
  const input = document.getElementById('reveal-key') as HTMLTextAreaElement | null;
  if (input) input.value = '';
  byId('reveal-slot').replaceChildren();
  byId('reveal-summary').textContent = '';
  byId('reveal-copied').textContent = '';
  byId('reveal-copy').textContent = 'Copy';
  show(byId('reveal-confirm'), false);
  show(byId('reveal-actions'), true);
  copied = false;
  const focus = afterClose;
  afterClose = null;
  return focus;
}

export function initReveal(): void {
  const dialog = byId<HTMLDialogElement>('reveal-dialog');
  byId('reveal-copy').addEventListener('click', () => void copyKey());
  byId('reveal-close').addEventListener('click', requestClose);
  byId('reveal-keep').addEventListener('click', keepOpen);
  byId('reveal-discard').addEventListener('click', closeReveal);
  // A close that did not go through closeReveal() forgets the key too.
  dialog.addEventListener('close', () => forget()?.());
  // Escape asks first, like Done (the browser would otherwise close the dialog at once).
  dialog.addEventListener('keydown', (e) => {
    if (e.key !== 'Escape') return;
    e.preventDefault();
    if (byId('reveal-confirm').hidden) requestClose();
    else keepOpen();
  });
  // Any other close request (the browser's own cancel): the same path, so the key is forgotten at once.
  dialog.addEventListener('cancel', (e) => {
    e.preventDefault();
    requestClose();
  });
}
