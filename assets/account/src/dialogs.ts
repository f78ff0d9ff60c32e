// Native <dialog> (the page behind is inert); Tab wraps inside; focus goes back to the control
// that opened it.
import { byId } from './dom.js';

const FOCUSABLE =
  'button:not([disabled]), input:not([disabled]), select:not([disabled]), textarea:not([disabled]), [href], [tabindex]:not([tabindex="-1"])';

type Dialog = HTMLDialogElement & { returnFocus?: HTMLElement | null };

export function openDialog(dialog: HTMLDialogElement, trigger?: HTMLElement | null): void {
  (dialog as Dialog).returnFocus = trigger ?? (document.activeElement as HTMLElement | null);
  dialog.showModal();
}

/** Closes without giving focus back: the caller moves focus itself. */
export function closeDialog(dialog: HTMLDialogElement): void {
  (dialog as Dialog).returnFocus = null;
  if (dialog.open) dialog.close();
}

function trapFocus(event: KeyboardEvent): void {
  if (event.key !== 'Tab') return;
  const dialog = event.currentTarget as HTMLElement;
  const items = [...dialog.querySelectorAll<HTMLElement>(FOCUSABLE)].filter((el) => el.getClientRects().length > 0);
  if (items.length === 0) return;
  const first = items[0];
  const last = items[items.length - 1];
  if (event.shiftKey && document.activeElement === first) {
    event.preventDefault();
    last.focus();
  } else if (!event.shiftKey && document.activeElement === last) {
    event.preventDefault();
    first.focus();
  }
}

function restoreFocus(dialog: Dialog): void {
  const target = dialog.returnFocus;
  dialog.returnFocus = null;
  if (!target) return;
  if (target.isConnected && target.getClientRects().length > 0) target.focus();
  else if (!byId('app').hidden) byId('app-title').focus();
}

/** Every dialog traps Tab; all but the reveal (which forgets its key first) give focus back on close. */
export function initDialogs(): void {
  for (const dialog of document.querySelectorAll('dialog')) {
    dialog.addEventListener('keydown', trapFocus);
    if (dialog.id !== 'reveal-dialog') dialog.addEventListener('close', () => restoreFocus(dialog));
  }
}
