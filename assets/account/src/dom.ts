// DOM helpers. Every piece of data reaches the DOM through textContent / createElement /
// setAttribute: the page's Content-Security-Policy enforces Trusted Types, so an HTML-string
// sink would throw.
import { describeError, errorStatus } from './errors.js';

const SVG_NS = 'http://www.w3.org/2000/svg';

/** The element with this id (the page's static markup has it; a missing one is a bug). */
export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`#${id} is missing from the page`);
  return el as T;
}

type Attr = string | number | boolean | null | undefined | ((event: never) => void);
type Child = Node | string | null | undefined | false;

/** createElement with attributes and children; strings become text nodes, never markup. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, Attr> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name === 'class') el.className = String(value);
    else if (name === 'text') el.textContent = String(value);
    else if (typeof value === 'function') el.addEventListener(name.slice(2), value as EventListener);
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children) if (child !== null && child !== undefined && child !== false) el.append(child);
  return el;
}

export function svg(tag: string, attrs: Record<string, string | number> = {}, ...children: Node[]): SVGElement {
  const el = document.createElementNS(SVG_NS, tag) as SVGElement;
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, String(value));
  for (const child of children) el.append(child);
  return el;
}

export function show(el: HTMLElement, visible = true): void {
  el.hidden = !visible;
}

/** Speaks a result (polite) or an error (assertive) in the page's live regions. */
export function announce(text: string, { error = false } = {}): void {
  const region = byId(error ? 'announcer-alert' : 'announcer');
  region.textContent = '';
  // A fresh text node in a later task, so that the same message twice is spoken twice.
  setTimeout(() => {
    region.textContent = text;
  }, 30);
}

export function setFieldError(errorId: string, input: HTMLElement | null, message: string): void {
  const el = byId(errorId);
  el.textContent = message;
  show(el, Boolean(message));
  if (message) announce(message, { error: true });
  if (input) {
    if (message) input.setAttribute('aria-invalid', 'true');
    else input.removeAttribute('aria-invalid');
  }
}

/** Shows an error in place (with a retry button when given) and speaks it. */
export function showAlert(el: HTMLElement, err: unknown, retry?: () => void): void {
  const { title, detail } = describeError(err);
  el.replaceChildren(...(title ? [h('strong', { text: title }), ' '] : []), h('span', { text: detail }));
  if (retry)
    el.append(
      ' ',
      h('button', { type: 'button', class: 'button secondary small retry', text: 'Try again', onclick: retry }),
    );
  el.dataset.status = String(errorStatus(err));
  show(el, true);
  announce(`${title} ${detail}`.trim(), { error: true });
}

export function clearAlert(el: HTMLElement): void {
  el.replaceChildren();
  delete el.dataset.status;
  show(el, false);
}

/** A table with a hidden caption, column headers and rows. */
export function dataTable(caption: string, headers: (string | Node)[], rows: Node[]): HTMLTableElement {
  return h(
    'table',
    { class: 'data-table' },
    h('caption', { class: 'visually-hidden', text: caption }),
    h('thead', {}, h('tr', {}, ...headers.map((label) => h('th', { scope: 'col' }, label)))),
    h('tbody', {}, ...rows),
  );
}

/** The ticked values of the checkboxes named `name`. */
export const checkedValues = (name: string, root: ParentNode = document): string[] =>
  [...root.querySelectorAll<HTMLInputElement>(`input[name="${name}"]:checked`)].map((box) => box.value);
