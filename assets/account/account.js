// The account page: API keys (mint with a one-time reveal, list, revoke) and today's usage.
// Plain browser JavaScript on the service's own JSON API; no dependencies, no build step.
// Every piece of data reaches the DOM through textContent / createElement / setAttribute: the
// page's Content-Security-Policy enforces Trusted Types, so an HTML-string sink would throw.

const SESSION_KEY = 'svc_session';
const ORG_KEY = 'svc_org';
const NAME_MAX = 100;
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));

/** Page state. The session token lives in sessionStorage (this tab only) and here while signed in. */
const state = {
  token: null,
  /** The org id sent as X-Org-Id, when the session does not name one and the user picked it. */
  orgHeader: null,
  me: null,
  keys: [],
  keysEnabled: true,
  usage: null,
  revokeTarget: null,
  revokeTrigger: null,
  revealedRowId: null,
};

class ApiError extends Error {
  constructor(status, message, retryAfter = null) {
    super(message);
    this.status = status;
    this.retryAfter = retryAfter;
  }
}

// ---------------------------------------------------------------------------------------------
// DOM helpers

/** createElement with attributes and children; strings become text nodes, never markup. */
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name === 'class') el.className = value;
    else if (name === 'text') el.textContent = value;
    else if (name.startsWith('on')) el.addEventListener(name.slice(2), value);
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children) if (child !== null && child !== undefined && child !== false) el.append(child);
  return el;
}

function show(el, visible = true) {
  el.hidden = !visible;
}

function setFieldError(errorId, inputEl, message) {
  const el = $(errorId);
  el.textContent = message || '';
  show(el, Boolean(message));
  if (inputEl) {
    if (message) inputEl.setAttribute('aria-invalid', 'true');
    else inputEl.removeAttribute('aria-invalid');
  }
}

/** What a person should read for an API error: a short headline for the well-known cases, then the server's own message. */
function describeError(err) {
  const status = err instanceof ApiError ? err.status : 0;
  const message = err instanceof Error ? err.message : String(err);
  switch (status) {
    case 409:
      return { title: 'Connect a repository to this organisation first.', detail: message };
    case 501:
      return { title: 'API keys are not enabled on this deployment.', detail: message };
    case 403:
      return { title: 'Not allowed.', detail: message };
    case 404:
      return { title: 'Not found.', detail: message };
    case 429:
      return { title: 'Too many requests.', detail: err.retryAfter ? `${message} Try again in ${err.retryAfter} s.` : message };
    default:
      return { title: status >= 500 ? 'Something went wrong on the server.' : '', detail: message };
  }
}

function showAlert(el, err) {
  const { title, detail } = describeError(err);
  el.replaceChildren(...[title ? h('strong', { text: title }) : null, title ? ' ' : null, h('span', { text: detail })].filter(Boolean));
  el.dataset.status = err instanceof ApiError ? String(err.status) : '0';
  show(el, true);
}

function clearAlert(el) {
  el.replaceChildren();
  delete el.dataset.status;
  show(el, false);
}

// ---------------------------------------------------------------------------------------------
// Time

const rtfAuto = new Intl.RelativeTimeFormat('en', { numeric: 'auto' });
const rtf = new Intl.RelativeTimeFormat('en', { numeric: 'always' });
const DAY = 86400;

/** "just now", "5 minutes ago", "yesterday", "in 30 days", "in 6 months", "in 1 year". */
function relativeTime(iso, now = Date.now()) {
  const seconds = (Date.parse(iso) - now) / 1000;
  const abs = Math.abs(seconds);
  if (abs < 45) return seconds <= 0 ? 'just now' : 'in a few seconds';
  if (abs < 3600) return rtf.format(Math.round(seconds / 60), 'minute');
  if (abs < DAY) return rtf.format(Math.round(seconds / 3600), 'hour');
  if (abs < 60 * DAY) return rtfAuto.format(Math.round(seconds / DAY), 'day');
  if (abs < 365 * DAY) return rtf.format(Math.round(seconds / (30 * DAY)), 'month');
  return rtf.format(Math.round(seconds / (365 * DAY)), 'year');
}

/** "2026-11-22 14:05:09 UTC": exact and unambiguous, for tooltips. */
function exactTime(iso) {
  const d = new Date(iso);
  return `${d.toISOString().slice(0, 10)} ${d.toISOString().slice(11, 19)} UTC`;
}

function timeCell(iso, empty) {
  if (!iso) return h('span', { class: 'muted', text: empty });
  return h('time', { datetime: iso, title: exactTime(iso), text: relativeTime(iso) });
}

/** "resets in 5 h 12 min (00:00 UTC)" */
function resetText(iso, now = Date.now()) {
  const ms = Math.max(0, Date.parse(iso) - now);
  const totalMinutes = Math.floor(ms / 60000);
  const hours = Math.floor(totalMinutes / 60);
  const minutes = totalMinutes % 60;
  const at = new Date(iso).toISOString().slice(11, 16);
  let span;
  if (totalMinutes < 1) span = 'less than a minute';
  else if (hours === 0) span = `${minutes} min`;
  else span = `${hours} h ${minutes} min`;
  return `Daily limits reset in ${span} (${at} UTC).`;
}

// ---------------------------------------------------------------------------------------------
// API

async function api(method, path, body) {
  const headers = { Accept: 'application/json', Authorization: `Bearer ${state.token}` };
  if (state.orgHeader) headers['X-Org-Id'] = state.orgHeader;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let res;
  try {
    res = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store',
      credentials: 'omit',
    });
  } catch {
    throw new ApiError(0, 'Could not reach the service. Check your connection and try again.');
  }
  if (res.status === 204) return null;
  let data = null;
  try {
    data = await res.json();
  } catch {
    data = null;
  }
  if (!res.ok) {
    const message = data && typeof data.message === 'string' ? data.message : `The request failed (HTTP ${res.status}).`;
    const err = new ApiError(res.status, message, res.headers.get('Retry-After'));
    if (res.status === 401) sessionRefused(err);
    throw err;
  }
  return data;
}

/** A 401 anywhere means the token is no good any more: forget it and ask for one. */
function sessionRefused(err) {
  signOut({ silent: true });
  setFieldError('signin-error', $('signin-token'), `The session token was not accepted: it may have expired or be invalid. Paste a new one. (Server: “${err.message}”)`);
}

const handledElsewhere = (err) => err instanceof ApiError && err.status === 401;

// ---------------------------------------------------------------------------------------------
// Views

function showView(view) {
  show($('loading'), view === 'loading');
  show($('signin'), view === 'signin');
  show($('org-picker'), view === 'org');
  show($('app'), view === 'app');
  show($('identity'), view === 'app' || view === 'org');
}

function showSignIn() {
  showView('signin');
  $('signin-token').value = '';
  $('signin-token').focus();
}

function showOrgPicker(message) {
  showView('org');
  setFieldError('org-error', $('org-id'), message || '');
  $('org-id').value = '';
  $('org-id').focus();
}

function signOut({ silent = false } = {}) {
  sessionStorage.removeItem(SESSION_KEY);
  sessionStorage.removeItem(ORG_KEY);
  state.token = null;
  state.orgHeader = null;
  state.me = null;
  state.keys = [];
  state.usage = null;
  for (const id of ['reveal-dialog', 'revoke-dialog']) {
    const dialog = $(id);
    if (dialog.open) dialog.close();
  }
  $('keys-body').replaceChildren();
  $('usage-meters').replaceChildren();
  for (const id of ['banner', 'keys-error', 'usage-error', 'create-error']) clearAlert($(id));
  setKeysEnabled(true);
  setFieldError('signin-error', $('signin-token'), '');
  showSignIn();
  if (!silent) {
    const banner = $('banner');
    banner.replaceChildren(h('span', { text: 'You are signed out. The session token was removed from this tab.' }));
    banner.dataset.status = 'signed-out';
    show(banner, true);
  }
}

async function start() {
  showView('loading');
  clearAlert($('banner'));
  state.orgHeader = sessionStorage.getItem(ORG_KEY);
  let me;
  let orgError = '';
  try {
    me = await api('GET', '/me');
  } catch (err) {
    if (handledElsewhere(err)) return;
    if (!(err instanceof ApiError && (err.status === 404 || err.status === 400) && state.orgHeader)) {
      showStartFailure(err);
      return;
    }
    // The organisation picked earlier is not (or no longer) one of the user's: ask again.
    sessionStorage.removeItem(ORG_KEY);
    state.orgHeader = null;
    orgError = err.message;
    try {
      me = await api('GET', '/me');
    } catch (retryErr) {
      if (handledElsewhere(retryErr)) return;
      showStartFailure(retryErr);
      return;
    }
  }
  renderIdentity(me);
  if (!me.org_id) {
    showOrgPicker(orgError);
    return;
  }
  state.me = me;
  configureCreateForm(me);
  showView('app');
  $('app-title').focus();
  await Promise.all([loadKeys(), loadUsage()]);
}

/** The service could not be asked who we are (network, 429, 5xx): the token may be fine, so offer a retry. */
function showStartFailure(err) {
  showView('none');
  const banner = $('banner');
  showAlert(banner, err);
  banner.append(
    ' ',
    h('button', { type: 'button', class: 'button secondary small', text: 'Try again', onclick: () => void start() }),
    ' ',
    h('button', { type: 'button', class: 'button-link', text: 'Use another token', onclick: () => signOut({ silent: true }) }),
  );
}

function renderIdentity(me) {
  $('identity-email').textContent = me.email;
  show($('identity-org-fact'), Boolean(me.org_id));
  show($('identity-role-fact'), Boolean(me.org_id));
  $('identity-org').textContent = me.org_id || '';
  $('identity-members').textContent = me.org_id ? `· ${me.org_member_count} ${me.org_member_count === 1 ? 'member' : 'members'}` : '';
  $('identity-role').textContent = me.org_role || 'no role';
  show($('switch-org'), Boolean(me.org_id && state.orgHeader));
}

function configureCreateForm(me) {
  const write = /** @type {HTMLInputElement} */ ($('scope-write'));
  const reason = $('scope-write-reason');
  if (me.scopes.includes('decisions:write')) {
    write.disabled = false;
    reason.textContent = '';
    show(reason, false);
  } else {
    write.disabled = true;
    write.checked = false;
    reason.textContent = `Your role (${me.org_role || 'none'}) in this organisation can only create read-only keys: it does not include decisions:write. An owner or admin can change your role.`;
    show(reason, true);
  }
  resetCreateForm();
}

function resetCreateForm() {
  $('key-name').value = '';
  updateCounter();
  for (const box of document.querySelectorAll('input[name="scope"]')) box.checked = box.value === 'decisions:read';
  $('key-expiry').value = '90';
  clearCreateErrors();
}

function clearCreateErrors() {
  setFieldError('key-name-error', $('key-name'), '');
  setFieldError('scopes-error', null, '');
  setFieldError('key-expiry-error', $('key-expiry'), '');
  clearAlert($('create-error'));
}

/** 501: this deployment has no API keys at all; say so once, at the top, and keep only usage. */
function setKeysEnabled(enabled, err) {
  state.keysEnabled = enabled;
  show($('create'), enabled);
  show($('keys'), enabled);
  const banner = $('banner');
  if (!enabled) showAlert(banner, err);
  else if (banner.dataset.status === '501') clearAlert(banner);
}

// ---------------------------------------------------------------------------------------------
// Keys

async function loadKeys() {
  clearAlert($('keys-error'));
  try {
    const { keys } = await api('GET', `/api-keys?org_id=${encodeURIComponent(state.me.org_id)}`);
    state.keys = keys;
    setKeysEnabled(true);
    renderKeys();
  } catch (err) {
    if (handledElsewhere(err)) return;
    show($('keys-table'), false);
    show($('keys-empty'), false);
    if (err instanceof ApiError && err.status === 501) setKeysEnabled(false, err);
    else showAlert($('keys-error'), err);
  }
}

function keyStatus(key, now = Date.now()) {
  if (key.revoked_at) return 'revoked';
  if (key.expires_at && Date.parse(key.expires_at) <= now) return 'expired';
  return 'active';
}

function maskedKey(key) {
  return `svc_live_${key.lookup}…${key.last4}`;
}

function renderKeys() {
  const body = $('keys-body');
  const rows = state.keys.map((key) => keyRow(key));
  body.replaceChildren(...rows);
  show($('keys-table'), rows.length > 0);
  show($('keys-empty'), rows.length === 0);
}

function keyRow(key) {
  const status = keyStatus(key);
  const name = key.name || 'Untitled key';
  const statusTitle =
    status === 'revoked' ? `Revoked ${exactTime(key.revoked_at)}` : status === 'expired' ? `Expired ${exactTime(key.expires_at)}` : 'Verifies requests';
  const revoke =
    status === 'revoked'
      ? null
      : h('button', {
          type: 'button',
          class: 'button danger small',
          'aria-label': `Revoke ${name}`,
          text: 'Revoke',
          onclick: (event) => openRevoke(key, event.currentTarget),
        });
  return h(
    'tr',
    { class: status === 'active' ? '' : 'muted-row', 'data-key-id': key.id, 'data-status': status },
    h('th', { scope: 'row', 'data-label': 'Name', tabindex: '-1', class: key.name ? 'key-name' : 'key-name untitled' }, name),
    h('td', { 'data-label': 'Key' }, h('code', { class: 'masked-key', title: 'The full key is never shown again', text: maskedKey(key) })),
    h('td', { 'data-label': 'Scopes' }, h('span', { class: 'badges' }, ...key.scopes.map((s) => h('span', { class: `badge scope ${s === 'decisions:write' ? 'write' : 'read'}`, text: s })))),
    h('td', { 'data-label': 'Created', class: 'cell-created' }, timeCell(key.created_at, '')),
    h('td', { 'data-label': 'Expires', class: 'cell-expires' }, timeCell(key.expires_at, 'Never')),
    h('td', { 'data-label': 'Last used', class: 'cell-last-used' }, timeCell(key.last_used_at, 'Never')),
    h('td', { 'data-label': 'Status', class: 'cell-status' }, h('span', { class: `badge status ${status}`, title: statusTitle, text: status })),
    h('td', { 'data-label': 'Actions', class: 'cell-actions' }, revoke),
  );
}

function focusRow(id) {
  const cell = document.querySelector(`tr[data-key-id="${CSS.escape(id)}"] th`);
  if (cell) cell.focus();
  else $('keys-title').focus();
}

// Create ---------------------------------------------------------------------------------------

function updateCounter() {
  const length = $('key-name').value.length;
  const counter = $('key-name-count');
  counter.textContent = `${length} / ${NAME_MAX}`;
  counter.classList.toggle('near', length >= NAME_MAX - 10);
}

const FIELD_OF_MESSAGE = [
  ['name', 'key-name-error', 'key-name'],
  ['scopes', 'scopes-error', null],
  ['expires_in_days', 'key-expiry-error', 'key-expiry'],
];

async function onCreate(event) {
  event.preventDefault();
  if (!state.me || !state.keysEnabled) return;
  clearCreateErrors();
  // The field's maxlength keeps names within the limit; the server's rules decide (a 400 shows beside its field).
  const name = $('key-name').value;
  const scopes = [...document.querySelectorAll('input[name="scope"]:checked')].map((box) => box.value);
  const body = { org_id: state.me.org_id, name, expires_in_days: Number($('key-expiry').value) };
  if (scopes.length > 0) body.scopes = scopes;

  const submit = $('create-submit');
  submit.disabled = true;
  submit.textContent = 'Creating…';
  try {
    const minted = await api('POST', '/api-keys', body);
    const { key, ...record } = minted;
    state.keys = [record, ...state.keys.filter((k) => k.id !== record.id)];
    renderKeys();
    resetCreateForm();
    openReveal(key, record);
  } catch (err) {
    if (handledElsewhere(err)) return;
    if (err instanceof ApiError && err.status === 400) {
      const match = FIELD_OF_MESSAGE.find(([field]) => err.message.startsWith(field));
      if (match) {
        const [, errorId, inputId] = match;
        setFieldError(errorId, inputId ? $(inputId) : null, err.message);
        (inputId ? $(inputId) : document.querySelector('input[name="scope"]')).focus();
        return;
      }
    }
    if (err instanceof ApiError && err.status === 501) {
      setKeysEnabled(false, err);
      return;
    }
    showAlert($('create-error'), err);
    $('create-error').setAttribute('tabindex', '-1');
    $('create-error').focus();
  } finally {
    submit.textContent = 'Create key';
    submit.disabled = !state.keysEnabled;
  }
}

// One-time reveal -----------------------------------------------------------------------------

let copiedTimer = 0;

function openReveal(key, record) {
  state.revealedRowId = record.id;
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
  $('reveal-slot').replaceChildren(field);
  const expiry = record.expires_at ? `expires ${relativeTime(record.expires_at)}` : 'never expires';
  $('reveal-summary').textContent = `${record.name || 'Untitled key'} · ${record.scopes.join(', ')} · ${expiry}`;
  $('reveal-copied').textContent = '';
  $('reveal-copy').textContent = 'Copy';
  $('reveal-dialog').showModal();
  // Size the field to the key once it is laid out (the dialog's width depends on the screen).
  field.style.height = `${field.scrollHeight + 2}px`;
  $('reveal-copy').focus();
}

async function copyKey() {
  const input = /** @type {HTMLTextAreaElement | null} */ (document.getElementById('reveal-key'));
  if (!input) return;
  let copied = false;
  if (navigator.clipboard && window.isSecureContext) {
    try {
      await navigator.clipboard.writeText(input.value);
      copied = true;
    } catch {
      copied = false;
    }
  }
  if (!copied) {
    // Older browsers and plain-HTTP origins: copy the selected text of the read-only field.
    input.focus();
    input.select();
    try {
      copied = document.execCommand('copy');
    } catch {
      copied = false;
    }
  }
  const button = $('reveal-copy');
  const status = $('reveal-copied');
  clearTimeout(copiedTimer);
  if (copied) {
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

/** Closing the reveal (Done, Escape) forgets the key: out of the DOM and out of every variable. */
function onRevealClosed() {
  clearTimeout(copiedTimer);
  const input = document.getElementById('reveal-key');
  if (input) input.value = '';
  $('reveal-slot').replaceChildren();
  $('reveal-summary').textContent = '';
  $('reveal-copied').textContent = '';
  $('reveal-copy').textContent = 'Copy';
  const rowId = state.revealedRowId;
  state.revealedRowId = null;
  if (rowId) focusRow(rowId);
}

// Revoke --------------------------------------------------------------------------------------

function openRevoke(key, trigger) {
  state.revokeTarget = key;
  state.revokeTrigger = trigger;
  const name = key.name || 'Untitled key';
  $('revoke-text').textContent =
    `“${name}” (${maskedKey(key)}) will stop working immediately: programs using it will be refused. This cannot be undone.`;
  clearAlert($('revoke-error'));
  $('revoke-confirm').disabled = false;
  $('revoke-dialog').showModal();
  $('revoke-cancel').focus();
}

async function confirmRevoke() {
  const key = state.revokeTarget;
  if (!key) return;
  const button = $('revoke-confirm');
  button.disabled = true;
  button.textContent = 'Revoking…';
  try {
    await api('DELETE', `/api-keys/${encodeURIComponent(key.id)}`);
    state.revokeTrigger = null;
    $('revoke-dialog').close();
    await loadKeys();
    // Keep the row visibly revoked even if the refresh failed.
    if (!state.keys.find((k) => k.id === key.id)?.revoked_at) {
      state.keys = state.keys.map((k) => (k.id === key.id ? { ...k, revoked_at: new Date().toISOString() } : k));
      renderKeys();
    }
    focusRow(key.id);
  } catch (err) {
    if (handledElsewhere(err)) return;
    showAlert($('revoke-error'), err);
  } finally {
    button.disabled = false;
    button.textContent = 'Revoke key';
  }
}

function onRevokeClosed() {
  const trigger = state.revokeTrigger;
  state.revokeTarget = null;
  state.revokeTrigger = null;
  if (trigger && trigger.isConnected) trigger.focus();
}

// ---------------------------------------------------------------------------------------------
// Usage

async function loadUsage() {
  clearAlert($('usage-error'));
  try {
    state.usage = await api('GET', '/usage');
    renderUsage();
  } catch (err) {
    if (handledElsewhere(err)) return;
    show($('usage-body'), false);
    show($('usage-plan'), false);
    showAlert($('usage-error'), err);
  }
}

function meter(id, label, { used, limit }, note) {
  const unlimited = limit === null || limit === undefined;
  const ratio = unlimited || limit === 0 ? 0 : used / limit;
  const level = unlimited ? '' : ratio >= 1 ? 'full' : ratio >= 0.8 ? 'high' : '';
  const fmt = (n) => n.toLocaleString('en');
  return h(
    'div',
    { class: `meter ${level}`, 'data-meter': id },
    h(
      'div',
      { class: 'meter-head' },
      h('span', { id: `meter-${id}-label`, class: 'meter-label', text: label }),
      h('span', { class: 'meter-value', text: unlimited ? `${fmt(used)} used · Unlimited` : `${fmt(used)} / ${fmt(limit)}` }),
    ),
    unlimited
      ? h('div', { class: 'meter-unlimited', 'aria-hidden': 'true' })
      : h('progress', { max: String(Math.max(limit, 1)), value: String(Math.min(used, limit)), 'aria-labelledby': `meter-${id}-label`, 'aria-valuetext': `${fmt(used)} of ${fmt(limit)} used` }),
    note ? h('p', { class: 'hint', text: note }) : null,
  );
}

function renderUsage() {
  const u = state.usage;
  if (!u) return;
  const plan = $('usage-plan');
  plan.textContent = `${u.plan === 'pro' ? 'Pro' : u.plan === 'free' ? 'Free' : u.plan} plan`;
  plan.dataset.plan = u.plan;
  show(plan, true);
  $('usage-meters').replaceChildren(
    meter('queries', 'Query wallet', u.mcp_queries, `Asks ${u.breakdown.asks.toLocaleString('en')} · Retrieves ${u.breakdown.retrieves.toLocaleString('en')}`),
    meter('imports', 'Imports', u.imports),
    meter('captures', 'Captures', u.captures),
  );
  const reset = $('usage-reset');
  reset.replaceChildren(h('time', { datetime: u.resets_at, title: exactTime(u.resets_at), text: resetText(u.resets_at) }));
  show($('usage-body'), true);
}

// ---------------------------------------------------------------------------------------------
// Wiring

function onSignIn(event) {
  event.preventDefault();
  const input = $('signin-token');
  const token = input.value.trim().replace(/^Bearer\s+/i, '');
  if (!token) {
    setFieldError('signin-error', input, 'Paste a session token.');
    input.focus();
    return;
  }
  if (token.startsWith('svc_live_')) {
    setFieldError('signin-error', input, 'That is an API key. Managing keys needs a session token (a JWT) instead: an API key can never create, list or revoke keys.');
    input.focus();
    return;
  }
  setFieldError('signin-error', input, '');
  clearAlert($('banner'));
  input.value = '';
  state.token = token;
  sessionStorage.setItem(SESSION_KEY, token);
  void start();
}

function onPickOrg(event) {
  event.preventDefault();
  const input = $('org-id');
  const org = input.value.trim();
  if (!UUID_RE.test(org)) {
    setFieldError('org-error', input, 'Enter the organisation ID, a UUID such as 3f2c5e1a-…');
    input.focus();
    return;
  }
  sessionStorage.setItem(ORG_KEY, org.toLowerCase());
  void start();
}

function init() {
  $('signin-form').addEventListener('submit', onSignIn);
  $('org-form').addEventListener('submit', onPickOrg);
  $('sign-out').addEventListener('click', () => signOut());
  $('switch-org').addEventListener('click', () => {
    sessionStorage.removeItem(ORG_KEY);
    state.orgHeader = null;
    showOrgPicker('');
  });
  $('create-form').addEventListener('submit', onCreate);
  $('key-name').addEventListener('input', updateCounter);
  $('reveal-copy').addEventListener('click', () => void copyKey());
  $('reveal-close').addEventListener('click', () => $('reveal-dialog').close());
  $('reveal-dialog').addEventListener('close', onRevealClosed);
  $('revoke-cancel').addEventListener('click', () => $('revoke-dialog').close());
  $('revoke-confirm').addEventListener('click', () => void confirmRevoke());
  $('revoke-dialog').addEventListener('close', onRevokeClosed);
  // Keep "resets in …" and relative times honest while the page stays open.
  setInterval(() => {
    if (state.me && !$('app').hidden) {
      renderUsage();
      const busy = $('reveal-dialog').open || $('revoke-dialog').open || $('keys-body').contains(document.activeElement);
      if (!busy && $('keys-error').hidden) renderKeys();
    }
  }, 60_000);

  state.token = sessionStorage.getItem(SESSION_KEY);
  if (state.token) void start();
  else showSignIn();
}

init();
