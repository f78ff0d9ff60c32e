// The account page: API keys (mint with a one-time reveal, list, rotate, revoke), usage, and
// for owners and admins the organisation's keys, audit log and webhooks.
// Plain browser JavaScript on the service's own JSON API; no dependencies, no build step.
// Every piece of data reaches the DOM through textContent / createElement / setAttribute: the
// page's Content-Security-Policy enforces Trusted Types, so an HTML-string sink would throw.
// Routes that a deployment does not have (404, or absent from /openapi.json) hide their feature.

const SESSION_KEY = 'svc_session';
const LEGACY_ORG_KEY = 'svc_org';
const THEME_KEY = 'svc_theme';
const NAME_MAX = 100;
const PAGE_SIZE = 50;
const EXPIRY_WARNING_DAYS = 7;
const USAGE_REFRESH_MS = 60_000;
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const DAY = 86400;
const SVG_NS = 'http://www.w3.org/2000/svg';

const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));

/** Page state. The session token lives in sessionStorage (this tab only) and here while signed in. */
const state = {
  token: null,
  /** The org id sent as X-Org-Id: from the URL (?org=), so that a link opens the same view. */
  orgHeader: null,
  me: null,
  /** The caller's orgs from GET /orgs; null when the deployment has no such route. */
  orgs: null,
  /** Paths of /openapi.json, to know which optional routes exist; null when unknown. */
  paths: null,
  keys: [],
  keysCursor: null,
  keysEnabled: true,
  showInactive: false,
  openDetails: new Set(),
  usage: null,
  daily: null,
  dialogTarget: null,
  revealedRowId: null,
  revealCopied: false,
  orgKeysCursor: null,
  serviceKeysCursor: null,
  /** user id → e-mail of the org's members (owners and admins only). */
  members: new Map(),
  auditCursor: null,
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

function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, String(value));
  for (const child of children) el.append(child);
  return el;
}

function show(el, visible = true) {
  el.hidden = !visible;
}

/** Speaks a result (polite) or an error (assertive) in the page's live regions. */
function announce(text, { error = false } = {}) {
  const region = $(error ? 'announcer-alert' : 'announcer');
  region.textContent = '';
  // A fresh text node in a later task, so that the same message twice is spoken twice.
  setTimeout(() => {
    region.textContent = text;
  }, 30);
}

function setFieldError(errorId, inputEl, message) {
  const el = $(errorId);
  el.textContent = message || '';
  show(el, Boolean(message));
  if (message) announce(message, { error: true });
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
      return {
        title: /workspace|repository/i.test(message)
          ? 'Connect a repository to this organisation first.'
          : 'Not possible right now.',
        detail: message,
      };
    case 501:
      return { title: 'API keys are not enabled on this deployment.', detail: message };
    case 403:
      return { title: 'Not allowed.', detail: message };
    case 404:
      return { title: 'Not found.', detail: message };
    case 429:
      return {
        title: 'Too many requests.',
        detail: err.retryAfter ? `${message} Try again in ${err.retryAfter} s.` : message,
      };
    default:
      return { title: status >= 500 ? 'Something went wrong on the server.' : '', detail: message };
  }
}

/** Shows an error in place (with a retry button when given) and speaks it. */
function showAlert(el, err, retry) {
  const { title, detail } = describeError(err);
  el.replaceChildren(
    ...[title ? h('strong', { text: title }) : null, title ? ' ' : null, h('span', { text: detail })].filter(Boolean),
  );
  if (retry)
    el.append(
      ' ',
      h('button', { type: 'button', class: 'button secondary small retry', text: 'Try again', onclick: retry }),
    );
  el.dataset.status = err instanceof ApiError ? String(err.status) : '0';
  show(el, true);
  announce(`${title} ${detail}`.trim(), { error: true });
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
  const d = new Date(iso).toISOString();
  return `${d.slice(0, 10)} ${d.slice(11, 19)} UTC`;
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

const isoDay = (ms) => new Date(ms).toISOString().slice(0, 10);

/** The last 30 UTC days, oldest first, today included. */
function last30Days(now = Date.now()) {
  return Array.from({ length: 30 }, (_, i) => isoDay(now - (29 - i) * DAY * 1000));
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
    const message =
      data && typeof data.message === 'string' ? data.message : `The request failed (HTTP ${res.status}).`;
    const err = new ApiError(res.status, message, res.headers.get('Retry-After'));
    if (res.status === 401) sessionRefused(err);
    throw err;
  }
  return data;
}

/** The route is not on this deployment (yet): its feature stays hidden. */
const isMissingRoute = (err) =>
  err instanceof ApiError && (err.status === 404 || err.status === 405 || err.status === 501);

/** A list body: the array itself or the first array-valued field among the names given. */
function listOf(data, ...names) {
  if (Array.isArray(data)) return data;
  for (const name of names) if (data && Array.isArray(data[name])) return data[name];
  return [];
}

/** Does the deployment's OpenAPI document list this route? Unknown (no document) counts as no. */
function hasRoute(method, path) {
  return Boolean(state.paths && state.paths[path] && state.paths[path][method]);
}

async function loadPaths() {
  if (state.paths) return;
  try {
    const res = await fetch('/openapi.json', { headers: { Accept: 'application/json' }, credentials: 'omit' });
    state.paths = res.ok ? ((await res.json()).paths ?? {}) : {};
  } catch {
    state.paths = {};
  }
}

/** A 401 anywhere means the token is no good any more: forget it and ask for one. */
function sessionRefused(err) {
  signOut({ silent: true });
  setFieldError(
    'signin-error',
    $('signin-token'),
    `The session token was not accepted: it may have expired or be invalid. Paste a new one. (Server: “${err.message}”)`,
  );
}

const handledElsewhere = (err) => err instanceof ApiError && err.status === 401;

// ---------------------------------------------------------------------------------------------
// Theme: the system's unless the toggle chose one (kept in localStorage; nothing secret).

function currentTheme() {
  const chosen = document.documentElement.dataset.theme;
  if (chosen === 'dark' || chosen === 'light') return chosen;
  return window.matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}

function applyTheme(theme) {
  if (theme) document.documentElement.dataset.theme = theme;
  else delete document.documentElement.dataset.theme;
  $('theme-toggle').setAttribute('aria-pressed', String(currentTheme() === 'dark'));
}

function toggleTheme() {
  const next = currentTheme() === 'dark' ? 'light' : 'dark';
  try {
    localStorage.setItem(THEME_KEY, next);
  } catch {
    // Storage may be off; the choice then lasts for this page only.
  }
  applyTheme(next);
  announce(next === 'dark' ? 'Dark theme on.' : 'Light theme on.');
}

// ---------------------------------------------------------------------------------------------
// The organisation in the URL

function orgFromUrl() {
  const org = new URL(location.href).searchParams.get('org');
  return org && UUID_RE.test(org) ? org.toLowerCase() : null;
}

function setOrgInUrl(orgId, { push = true } = {}) {
  const url = new URL(location.href);
  if (orgId) url.searchParams.set('org', orgId);
  else url.searchParams.delete('org');
  if (url.href === location.href) return;
  if (push) history.pushState(null, '', url);
  else history.replaceState(null, '', url);
}

function chooseOrg(orgId) {
  setOrgInUrl(orgId);
  void start();
}

// ---------------------------------------------------------------------------------------------
// Views

function showView(view) {
  show($('loading'), view === 'loading');
  show($('signin'), view === 'signin');
  show($('org-picker'), view === 'org');
  show($('no-org'), view === 'no-org');
  show($('app'), view === 'app');
  show($('identity'), view === 'app' || view === 'org' || view === 'no-org');
  show($('sign-out'), view !== 'signin' && view !== 'loading');
}

function showSignIn() {
  showView('signin');
  $('signin-token').value = '';
  $('signin-token').focus();
}

/** Several orgs: a list of them by name (GET /orgs), or the ID form where the route is missing. */
function showOrgPicker(message) {
  showView('org');
  const list = $('org-list');
  if (state.orgs) {
    list.replaceChildren(
      ...state.orgs.map((org) =>
        h(
          'li',
          {},
          h(
            'button',
            { type: 'button', class: 'org-choice', 'data-org-id': org.id, onclick: () => chooseOrg(org.id) },
            h('span', { class: 'org-name', text: org.name || org.id }),
            h(
              'span',
              { class: 'org-meta' },
              h('span', { class: 'badge role', text: org.role || 'member' }),
              org.plan ? h('span', { class: 'badge plan', 'data-plan': org.plan, text: planName(org.plan) }) : null,
            ),
          ),
        ),
      ),
    );
  }
  show(list, Boolean(state.orgs));
  show($('org-form'), !state.orgs);
  $('org-picker-lead').textContent = state.orgs
    ? 'You belong to more than one organisation. Choose the one whose keys you want to manage; you can switch at any time from the top bar.'
    : 'You belong to more than one organisation. Enter the ID of the one you want to manage keys for.';
  setFieldError('org-error', $('org-id'), state.orgs ? '' : message || '');
  if (message && state.orgs) showAlert($('banner'), new ApiError(404, message));
  $('org-id').value = '';
  $('org-title').focus();
}

function signOut({ silent = false } = {}) {
  sessionStorage.removeItem(SESSION_KEY);
  sessionStorage.removeItem(LEGACY_ORG_KEY);
  Object.assign(state, {
    token: null,
    orgHeader: null,
    me: null,
    orgs: null,
    keys: [],
    keysCursor: null,
    usage: null,
    daily: null,
  });
  state.openDetails.clear();
  for (const dialog of document.querySelectorAll('dialog')) if (dialog.open) dialog.close();
  $('keys-body').replaceChildren();
  $('keys-inactive').replaceChildren();
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
    announce('You are signed out.');
  }
}

/** GET /orgs, or null when this deployment has no such route. */
async function loadOrgs() {
  try {
    const data = await api('GET', '/orgs?limit=100');
    return listOf(data, 'orgs', 'items');
  } catch (err) {
    if (isMissingRoute(err)) return null;
    throw err;
  }
}

async function start() {
  showView('loading');
  clearAlert($('banner'));
  state.orgHeader = orgFromUrl();
  let me;
  let orgError = '';
  const paths = loadPaths();
  const orgs = loadOrgs().catch((err) => err);
  try {
    me = await api('GET', '/me');
  } catch (err) {
    if (handledElsewhere(err)) return;
    if (!(err instanceof ApiError && (err.status === 404 || err.status === 400) && state.orgHeader)) {
      showStartFailure(err);
      return;
    }
    // The organisation in the link is not (or no longer) one of the user's: ask again.
    setOrgInUrl(null, { push: false });
    state.orgHeader = null;
    orgError = 'The organisation in the link was not found, or you are not a member of it. Choose one of yours.';
    try {
      me = await api('GET', '/me');
    } catch (retryErr) {
      if (handledElsewhere(retryErr)) return;
      showStartFailure(retryErr);
      return;
    }
  }
  const orgList = await orgs;
  if (orgList instanceof Error) {
    if (handledElsewhere(orgList)) return;
    state.orgs = null;
  } else state.orgs = orgList;
  await paths;
  renderIdentity(me);
  if (!me.org_id) {
    if (state.orgs && state.orgs.length === 0) {
      showView('no-org');
      $('no-org-title').focus();
      return;
    }
    showOrgPicker(orgError);
    return;
  }
  state.me = me;
  configureCreateForm(me);
  showView('app');
  if (orgError) showAlert($('banner'), new ApiError(404, orgError));
  $('app-title').focus();
  announce(`API keys for ${orgName(me.org_id)}.`);
  // Sections appear top-down, each once the one above has its final height, so nothing visible
  // moves while the page fills in (no layout shift): keys, then usage, then the org's section.
  show($('usage'), false);
  show($('org-admin'), false);
  const usage = loadUsage();
  const admin = loadOrgAdmin();
  await loadKeys();
  show($('usage'), true);
  await usage;
  const adminShown = await admin;
  show($('org-admin'), adminShown);
}

/** The service could not be asked who we are (network, 429, 5xx): the token may be fine, so offer a retry. */
function showStartFailure(err) {
  showView('none');
  const banner = $('banner');
  showAlert(banner, err, () => void start());
  banner.append(
    ' ',
    h('button', {
      type: 'button',
      class: 'button-link',
      text: 'Use another token',
      onclick: () => signOut({ silent: true }),
    }),
  );
}

const planName = (plan) => `${plan === 'pro' ? 'Pro' : plan === 'free' ? 'Free' : plan} plan`;

function orgName(orgId) {
  const org = state.orgs?.find((o) => o.id === orgId);
  return org?.name || 'this organisation';
}

function renderIdentity(me) {
  $('identity-email').textContent = me.email;
  $('identity-email').title = me.email;
  const switcher = /** @type {HTMLSelectElement} */ ($('org-switch'));
  const several = Boolean(state.orgs && state.orgs.length > 1);
  if (several) {
    const options = state.orgs.map((o) =>
      h('option', { value: o.id, text: `${o.name || o.id} (${o.role || 'member'})` }),
    );
    if (!me.org_id) options.unshift(h('option', { value: '', text: 'Choose an organisation…' }));
    switcher.replaceChildren(...options);
    switcher.value = me.org_id || '';
  }
  show($('org-switcher'), several && Boolean(me.org_id));
  show($('org-current'), Boolean(me.org_id) && !several);
  const org = state.orgs?.find((o) => o.id === me.org_id);
  $('identity-org-name').textContent = org?.name || me.org_id || '';
  $('identity-role').textContent = me.org_role || 'no role';
}

function configureCreateForm(me) {
  const write = /** @type {HTMLInputElement} */ ($('scope-write'));
  const reason = $('scope-write-reason');
  if (me.scopes.includes('decisions:write')) {
    write.disabled = false;
    write.removeAttribute('aria-describedby');
    reason.textContent = '';
    show(reason, false);
  } else {
    write.disabled = true;
    write.checked = false;
    write.setAttribute('aria-describedby', 'scope-write-reason');
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
  show($('create-open'), enabled);
  show($('keys'), enabled);
  const banner = $('banner');
  if (!enabled) showAlert(banner, err);
  else if (banner.dataset.status === '501') clearAlert(banner);
}

// ---------------------------------------------------------------------------------------------
// Dialogs: native <dialog> (the page behind is inert); Tab wraps inside; focus goes back to the
// control that opened it.

const FOCUSABLE =
  'button:not([disabled]), input:not([disabled]), select:not([disabled]), textarea:not([disabled]), [href], [tabindex]:not([tabindex="-1"])';

function openDialog(dialog, trigger) {
  dialog.returnFocus = trigger ?? document.activeElement;
  dialog.showModal();
}

function trapFocus(event) {
  if (event.key !== 'Tab') return;
  const dialog = event.currentTarget;
  const items = [...dialog.querySelectorAll(FOCUSABLE)].filter((el) => el.getClientRects().length > 0);
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

/** Focus back to the opener; `returnFocus = null` before close() means the caller moves focus itself. */
function restoreFocus(dialog) {
  const target = dialog.returnFocus;
  dialog.returnFocus = null;
  if (!target) return;
  if (target.isConnected && target.getClientRects().length > 0) target.focus();
  else if (!$('app').hidden) $('app-title').focus();
}

// ---------------------------------------------------------------------------------------------
// Keys

async function loadKeys({ more = false } = {}) {
  clearAlert($('keys-error'));
  const section = $('keys');
  if (!more) {
    section.setAttribute('aria-busy', 'true');
    if (state.keys.length === 0) show($('keys-skeleton'), true);
  }
  const moreButton = $('keys-more');
  moreButton.disabled = true;
  try {
    const query = new URLSearchParams({ org_id: state.me.org_id, limit: String(PAGE_SIZE) });
    if (more && state.keysCursor) query.set('cursor', state.keysCursor);
    const data = await api('GET', `/api-keys?${query}`);
    const page = listOf(data, 'keys');
    state.keys = more ? [...state.keys, ...page.filter((k) => !state.keys.some((s) => s.id === k.id))] : page;
    state.keysCursor = data && typeof data.next_cursor === 'string' ? data.next_cursor : null;
    setKeysEnabled(true);
    renderKeys();
    if (more) {
      announce(`${page.length} more ${page.length === 1 ? 'key' : 'keys'} loaded.`);
      // The button may be gone now: focus goes to the first key that arrived.
      const first = page.find((k) => keyStatus(k) === 'active');
      if (first) focusRow(first.id);
    }
  } catch (err) {
    if (handledElsewhere(err)) return;
    if (err instanceof ApiError && err.status === 501) setKeysEnabled(false, err);
    else {
      if (!more) {
        show($('keys-table'), false);
        show($('keys-empty'), false);
      }
      showAlert($('keys-error'), err, () => void loadKeys({ more }));
    }
  } finally {
    show($('keys-skeleton'), false);
    section.setAttribute('aria-busy', 'false');
    moreButton.disabled = false;
  }
}

function keyStatus(key, now = Date.now()) {
  if (key.status === 'denied') return 'denied';
  if (key.revoked_at) return 'revoked';
  if (key.status === 'pending') return 'pending';
  if (key.expires_at && Date.parse(key.expires_at) <= now) return 'expired';
  if (key.enabled === false) return 'disabled';
  return 'active';
}

/** Still the owner's to use again: active, or disabled (it keeps its place in the main list, with an Enable button). */
const usable = (status) => status === 'active' || status === 'disabled';

/** The badge a key shows: its state, how soon it expires, or its rotation grace. */
function keyBadge(key, now = Date.now()) {
  const status = keyStatus(key, now);
  if (status === 'denied')
    return { variant: 'revoked', text: 'Denied', title: 'An admin denied this key: it never verifies' };
  if (status === 'pending')
    return {
      variant: 'expiring',
      text: 'Pending approval',
      title: 'Does not verify until an owner or admin approves it',
    };
  if (status === 'revoked')
    return { variant: 'revoked', text: 'Revoked', title: `Revoked ${exactTime(key.revoked_at)}` };
  if (status === 'expired')
    return { variant: 'expired', text: 'Expired', title: `Expired ${exactTime(key.expires_at)}` };
  if (status === 'disabled')
    return { variant: 'expired', text: 'Disabled', title: 'Refused (401) until enabled again' };
  if (key.previous_secret_expires_at && Date.parse(key.previous_secret_expires_at) > now) {
    return {
      variant: 'grace',
      text: 'In grace',
      title: `Rotated: the previous secret works until ${exactTime(key.previous_secret_expires_at)}`,
    };
  }
  if (key.expires_at) {
    const days = Math.ceil((Date.parse(key.expires_at) - now) / (DAY * 1000));
    const text = days <= 1 ? 'Expires within a day' : `Expires in ${days} days`;
    return {
      variant: days <= EXPIRY_WARNING_DAYS ? 'expiring' : 'active',
      text,
      title: `Expires ${exactTime(key.expires_at)}`,
    };
  }
  return { variant: 'active', text: 'Active', title: 'Verifies requests; never expires' };
}

function maskedKey(key) {
  return `svc_live_${key.lookup}…${key.last4}`;
}

const keyName = (key) => key.name || 'Untitled key';

function renderKeys() {
  const now = Date.now();
  const active = state.keys.filter((k) => usable(keyStatus(k, now)));
  const inactive = state.keys.filter((k) => !usable(keyStatus(k, now)));
  $('keys-body').replaceChildren(...active.flatMap((key) => keyRows(key, now)));
  $('keys-inactive').replaceChildren(...inactive.flatMap((key) => keyRows(key, now)));
  show($('keys-inactive'), state.showInactive && inactive.length > 0);
  show($('keys-table'), active.length > 0 || (state.showInactive && inactive.length > 0));
  show($('keys-empty'), active.length === 0);
  const toggle = $('inactive-toggle');
  toggle.textContent = `${state.showInactive ? 'Hide' : 'Show'} ${inactive.length} inactive ${inactive.length === 1 ? 'key' : 'keys'}`;
  toggle.setAttribute('aria-expanded', String(state.showInactive));
  show(toggle, inactive.length > 0);
  show($('keys-more'), Boolean(state.keysCursor));
}

function keyRows(key, now) {
  const status = keyStatus(key, now);
  const badge = keyBadge(key, now);
  const name = keyName(key);
  const live = status === 'active';
  const open = state.openDetails.has(key.id);
  const detailsId = `details-${key.id}`;
  const actions = [
    h('button', {
      type: 'button',
      class: 'button ghost small',
      'aria-expanded': String(open),
      'aria-controls': detailsId,
      'aria-label': `Details of ${name}`,
      text: 'Details',
      onclick: () => toggleDetails(key.id),
    }),
  ];
  if (live && hasRoute('post', '/api-keys/{keyID}/rotate')) {
    actions.push(
      h('button', {
        type: 'button',
        class: 'button secondary small',
        'aria-label': `Rotate ${name}`,
        text: 'Rotate',
        onclick: (e) => openRotate(key, e.currentTarget),
      }),
    );
  }
  if (usable(status) && hasRoute('patch', '/api-keys/{keyID}')) {
    const enable = status === 'disabled';
    actions.push(
      h('button', {
        type: 'button',
        class: enable ? 'button primary small' : 'button secondary small',
        'aria-label': `${enable ? 'Enable' : 'Disable'} ${name}`,
        text: enable ? 'Enable' : 'Disable',
        onclick: () =>
          void updateKey(
            key,
            { enabled: enable },
            enable ? `Key ${name} enabled.` : `Key ${name} disabled: it is refused until enabled again.`,
          ),
      }),
    );
  }
  if (status !== 'revoked') {
    actions.push(
      h('button', {
        type: 'button',
        class: 'button danger small',
        'aria-label': `Revoke ${name}`,
        text: 'Revoke',
        onclick: (e) => openRevoke(key, e.currentTarget),
      }),
    );
  }
  const row = h(
    'tr',
    { class: live ? 'key-row' : 'key-row muted-row', 'data-key-id': key.id, 'data-status': status },
    h(
      'th',
      { scope: 'row', 'data-label': 'Name', tabindex: '-1', class: key.name ? 'key-name' : 'key-name untitled' },
      h('span', { class: 'name-text', text: name }),
    ),
    h(
      'td',
      { 'data-label': 'Key' },
      h('code', { class: 'masked-key', title: 'The full key is never shown again', text: maskedKey(key) }),
    ),
    h(
      'td',
      { 'data-label': 'Scopes' },
      h(
        'span',
        { class: 'badges' },
        ...key.scopes.map((s) =>
          h('span', { class: `badge scope ${s === 'decisions:write' ? 'write' : 'read'}`, text: s }),
        ),
      ),
    ),
    h(
      'td',
      { 'data-label': 'Status', class: 'cell-status' },
      h('span', { class: `badge status ${badge.variant}`, title: badge.title, text: badge.text }),
    ),
    h('td', { 'data-label': 'Last used', class: 'cell-last-used' }, timeCell(key.last_used_at, 'Never')),
    h('td', { 'data-label': 'Created', class: 'cell-created' }, timeCell(key.created_at, '')),
    h('td', { 'data-label': 'Actions', class: 'cell-actions' }, h('span', { class: 'actions' }, ...actions)),
  );
  const details = h(
    'tr',
    { class: 'details-row', id: detailsId, hidden: !open },
    h('td', { colspan: '7' }, detailsPanel(key)),
  );
  return [row, details];
}

function detailsPanel(key) {
  const facts = h(
    'dl',
    { class: 'facts' },
    h('div', {}, h('dt', { text: 'Key ID' }), h('dd', {}, h('code', { text: key.id }))),
    h('div', {}, h('dt', { text: 'Created' }), h('dd', {}, timeCell(key.created_at, ''))),
    h('div', {}, h('dt', { text: 'Expires' }), h('dd', {}, timeCell(key.expires_at, 'Never'))),
    key.previous_secret_expires_at
      ? h(
          'div',
          {},
          h('dt', { text: 'Previous secret works until' }),
          h('dd', {}, timeCell(key.previous_secret_expires_at, '')),
        )
      : null,
  );
  const usage = h('div', { class: 'key-usage', 'data-usage-for': key.id });
  const panel = h('div', { class: 'details-panel' }, facts, controlsPanel(key), usage);
  if (state.openDetails.has(key.id)) void loadKeyUsage(key, usage);
  return panel;
}

function toggleDetails(id) {
  if (state.openDetails.has(id)) state.openDetails.delete(id);
  else state.openDetails.add(id);
  const row = document.getElementById(`details-${id}`);
  const button = document.querySelector(
    `tr[data-key-id="${CSS.escape(id)}"] [aria-controls="details-${CSS.escape(id)}"]`,
  );
  const open = state.openDetails.has(id);
  if (button) button.setAttribute('aria-expanded', String(open));
  if (row) {
    show(row, open);
    const key = state.keys.find((k) => k.id === id);
    if (open && key) void loadKeyUsage(key, row.querySelector('.key-usage'));
  }
}

/** The key's requests over the last 30 days (GET /api-keys/{id}/usage), where the route exists. */
async function loadKeyUsage(key, slot) {
  if (!slot) return;
  slot.replaceChildren(h('div', { class: 'skeleton-chart', 'aria-hidden': 'true' }));
  try {
    const data = await api('GET', `/api-keys/${encodeURIComponent(key.id)}/usage`);
    const series = seriesOf(listOf(data, 'days'), totalOf);
    slot.replaceChildren(
      h('p', { class: 'facts-title', text: 'Usage charged with this key' }),
      chart(
        `Units charged with ${keyName(key)} per day (queries, imports and captures), last 30 days`,
        series,
        `key-${key.id}`,
      ),
    );
  } catch (err) {
    if (handledElsewhere(err)) return;
    if (isMissingRoute(err))
      slot.replaceChildren(h('p', { class: 'muted', text: 'Usage per key is not available on this deployment.' }));
    else {
      const alert = h('div', { class: 'alert' });
      slot.replaceChildren(alert);
      showAlert(alert, err, () => void loadKeyUsage(key, slot));
    }
  }
}

function focusRow(id) {
  const cell = document.querySelector(
    `tr[data-key-id="${CSS.escape(id)}"] th, tr[data-service-key-id="${CSS.escape(id)}"] th`,
  );
  if (cell && cell.getClientRects().length > 0) cell.focus();
  else $('app-title').focus();
}

function toggleInactive() {
  state.showInactive = !state.showInactive;
  renderKeys();
  const count = state.keys.filter((k) => keyStatus(k) !== 'active').length;
  announce(state.showInactive ? `Showing ${count} inactive keys.` : 'Inactive keys hidden.');
}

// Create ---------------------------------------------------------------------------------------

function updateCounter() {
  const length = $('key-name').value.length;
  const counter = $('key-name-count');
  counter.textContent = `${length} / ${NAME_MAX}`;
  counter.classList.toggle('near', length >= NAME_MAX - 10);
}

function openCreate(trigger) {
  resetCreateForm();
  openDialog($('create-dialog'), trigger);
  $('key-name').focus();
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
    const dialog = $('create-dialog');
    dialog.returnFocus = null;
    dialog.close();
    openReveal(key, record, 'created');
    void refreshOrgPanels();
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
      $('create-dialog').close();
      setKeysEnabled(false, err);
      return;
    }
    showAlert($('create-error'), err);
    $('create-error').focus();
  } finally {
    submit.textContent = 'Create key';
    submit.disabled = !state.keysEnabled;
  }
}

// One-time reveal -----------------------------------------------------------------------------

let copiedTimer = 0;

function openReveal(key, record, how) {
  state.revealedRowId = record.id;
  state.revealCopied = false;
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
  $('reveal-title').textContent = how === 'rotated' ? 'Save the new secret' : 'Save your new key';
  $('reveal-summary').textContent = `${keyName(record)} · ${record.scopes.join(', ')} · ${expiry}`;
  $('reveal-copied').textContent = '';
  $('reveal-copy').textContent = 'Copy';
  show($('reveal-confirm'), false);
  show($('reveal-actions'), true);
  const dialog = $('reveal-dialog');
  dialog.returnFocus = null;
  dialog.showModal();
  // Size the field to the key once it is laid out (the dialog's width depends on the screen).
  field.rows = Math.max(2, Math.ceil(field.scrollHeight / parseFloat(getComputedStyle(field).lineHeight || '20')));
  $('reveal-copy').focus();
  announce(
    how === 'rotated'
      ? `Key ${keyName(record)} rotated. Copy the new secret now: it is shown only once.`
      : `Key ${keyName(record)} created. Copy it now: it is shown only once.`,
  );
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
    state.revealCopied = true;
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
function requestRevealClose() {
  if (state.revealCopied) {
    closeReveal();
    return;
  }
  show($('reveal-actions'), false);
  show($('reveal-confirm'), true);
  $('reveal-keep').focus();
  announce('You have not copied the key. Once closed it cannot be shown again. Close anyway?');
}

function keepRevealOpen() {
  show($('reveal-confirm'), false);
  show($('reveal-actions'), true);
  $('reveal-copy').focus();
}

/**
 * Closes the reveal and forgets the key in the same task: out of the DOM and out of every
 * variable before close() returns. The dialog's 'close' event comes a task later (the browser
 * queues it), so waiting for it would leave the key in a closed dialog's field meanwhile.
 */
function closeReveal() {
  const rowId = forgetRevealedKey();
  const dialog = $('reveal-dialog');
  if (dialog.open) dialog.close();
  if (rowId) focusRow(rowId);
}

/** The 'close' event: a close that did not go through closeReveal() forgets the key too. */
function onRevealClosed() {
  const rowId = forgetRevealedKey();
  if (rowId) focusRow(rowId);
}

/** Empties the reveal; returns the row to focus once (null when the key was already forgotten). */
function forgetRevealedKey() {
  clearTimeout(copiedTimer);
  const input = document.getElementById('reveal-key');
  if (input) input.value = '';
  $('reveal-slot').replaceChildren();
  $('reveal-summary').textContent = '';
  $('reveal-copied').textContent = '';
  $('reveal-copy').textContent = 'Copy';
  show($('reveal-confirm'), false);
  show($('reveal-actions'), true);
  state.revealCopied = false;
  const rowId = state.revealedRowId;
  state.revealedRowId = null;
  return rowId;
}

// Revoke --------------------------------------------------------------------------------------

/** `scope` says whose list the key is in: the caller's own, or the org's (admin view). */
function openRevoke(key, trigger, scope = 'own') {
  state.dialogTarget = { key, scope };
  const name = keyName(key);
  $('revoke-text').textContent =
    `“${name}” (${maskedKey(key)}) will stop working immediately: programs using it will be refused. This cannot be undone.`;
  const needsName = Boolean(key.name);
  show($('revoke-name-field'), needsName);
  $('revoke-name-label').textContent = `Type “${key.name}” to confirm`;
  $('revoke-name').value = '';
  clearAlert($('revoke-error'));
  $('revoke-confirm').disabled = needsName;
  openDialog($('revoke-dialog'), trigger);
  (needsName ? $('revoke-name') : $('revoke-cancel')).focus();
}

function onRevokeNameInput() {
  const target = state.dialogTarget;
  $('revoke-confirm').disabled = !target || $('revoke-name').value.trim() !== target.key.name.trim();
}

async function confirmRevoke(event) {
  event.preventDefault();
  const target = state.dialogTarget;
  const button = $('revoke-confirm');
  if (!target || button.disabled) return;
  const { key, scope } = target;
  button.disabled = true;
  button.textContent = 'Revoking…';
  try {
    const org = encodeURIComponent(state.me.org_id);
    const id = encodeURIComponent(key.id);
    const path =
      scope === 'org'
        ? `/orgs/${org}/api-keys/${id}`
        : scope === 'service'
          ? `/orgs/${org}/service-keys/${id}`
          : `/api-keys/${id}`;
    await api('DELETE', path);
    const dialog = $('revoke-dialog');
    dialog.returnFocus = null;
    dialog.close();
    announce(`Key ${keyName(key)} revoked. It no longer works.`);
    if (scope === 'org' || scope === 'service') {
      await Promise.all([loadOrgKeys(), loadServiceKeys(), loadKeys(), loadAudit()]);
      $(scope === 'org' ? 'org-keys-title' : 'service-keys-title').focus();
      return;
    }
    // Show it among the inactive keys at once, so focus lands on it.
    const revokedAt = new Date().toISOString();
    state.keys = state.keys.map((k) => (k.id === key.id ? { ...k, revoked_at: k.revoked_at ?? revokedAt } : k));
    state.showInactive = true;
    renderKeys();
    focusRow(key.id);
    void refreshOrgPanels();
  } catch (err) {
    if (handledElsewhere(err)) return;
    showAlert($('revoke-error'), err);
  } finally {
    button.disabled = false;
    button.textContent = 'Revoke key';
  }
}

// Key controls --------------------------------------------------------------------------------

/** The org-wide key list and the audit log, for owners and admins: every change shows there at once, not after a reload. */
async function refreshOrgPanels() {
  if (!isManager()) return;
  await Promise.all([loadOrgKeys(), loadAudit()]);
}

/** PATCH /api-keys/{id}; the record that comes back replaces the key's row. Returns false on a refusal (shown in `alertEl`, or announced). */
async function updateKey(key, body, done, alertEl = null) {
  try {
    const record = await api('PATCH', `/api-keys/${encodeURIComponent(key.id)}`, body);
    state.keys = state.keys.map((k) => (k.id === key.id ? { ...record } : k));
    renderKeys();
    focusRow(key.id);
    announce(done);
    void refreshOrgPanels();
    return true;
  } catch (err) {
    if (handledElsewhere(err)) return false;
    if (alertEl) showAlert(alertEl, err);
    else announce(describeError(err), { error: true });
    return false;
  }
}

const pretty = (value) => (value === undefined || value === null ? '' : JSON.stringify(value, null, 2));

/** A key's controls in its details: what applies now, and a form to change them (JSON, checked by the server). */
function controlsPanel(key) {
  const credits = key.credits;
  const facts = h(
    'dl',
    { class: 'control-facts' },
    h(
      'div',
      {},
      h('dt', { text: 'Rate limits' }),
      h('dd', {
        text: key.rate_limits
          ? key.rate_limits.map((w) => `${w.name}: ${w.limit} per ${w.window_seconds} s`).join('; ')
          : 'Plan default',
      }),
    ),
    h(
      'div',
      {},
      h('dt', { text: 'Credits' }),
      h('dd', {
        'data-credits': '',
        text: credits
          ? `${credits.remaining} left${credits.next_refill_at ? `, refill to ${credits.refill.amount} ${exactTime(credits.next_refill_at)}` : ''}`
          : 'Unlimited',
      }),
    ),
    h(
      'div',
      {},
      h('dt', { text: 'Allowed networks' }),
      h('dd', { text: key.allowed_cidrs ? key.allowed_cidrs.join(', ') : 'Anywhere' }),
    ),
    key.metadata
      ? h('div', {}, h('dt', { text: 'Metadata' }), h('dd', {}, h('code', { text: JSON.stringify(key.metadata) })))
      : null,
  );
  if (keyStatus(key) === 'revoked' || !hasRoute('patch', '/api-keys/{keyID}')) return facts;
  const id = (field) => `ctl-${field}-${key.id}`;
  const area = (field, label, value, hint) =>
    h(
      'div',
      { class: 'field' },
      h('label', { for: id(field), text: label }),
      h('textarea', { id: id(field), rows: '3', spellcheck: 'false', 'aria-describedby': `${id(field)}-hint` }, value),
      h('p', { class: 'hint', id: `${id(field)}-hint`, text: hint }),
    );
  const alert = h('div', { class: 'alert', hidden: true, role: 'alert' });
  const form = h(
    'form',
    { class: 'controls-form', 'aria-label': `Controls of ${keyName(key)}` },
    area(
      'rate_limits',
      'Rate limits (JSON)',
      pretty(key.rate_limits),
      'Up to 5 windows, e.g. [{"name":"default","limit":10,"window_seconds":1}]; empty: the plan default.',
    ),
    area(
      'credits',
      'Credits (JSON)',
      credits ? pretty({ remaining: credits.remaining, ...(credits.refill ? { refill: credits.refill } : {}) }) : '',
      'e.g. {"remaining":1000,"refill":{"amount":1000,"interval":"monthly"}}; empty: unlimited.',
    ),
    area(
      'allowed_cidrs',
      'Allowed networks (one CIDR a line)',
      (key.allowed_cidrs ?? []).join('\n'),
      'e.g. 203.0.113.0/24; empty: anywhere.',
    ),
    area(
      'metadata',
      'Metadata (JSON object)',
      pretty(key.metadata),
      'At most 1 KB; given to your services with each request; empty: none.',
    ),
    alert,
    h('button', { type: 'submit', class: 'button primary small', text: 'Save controls' }),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    clearAlert(alert);
    const body = {};
    for (const field of ['rate_limits', 'credits', 'metadata']) {
      const text = form.querySelector(`#${CSS.escape(id(field))}`).value.trim();
      try {
        body[field] = text === '' ? null : JSON.parse(text);
      } catch {
        showAlert(alert, new ApiError(400, `${field} is not valid JSON`));
        return;
      }
    }
    const cidrs = form
      .querySelector(`#${CSS.escape(id('allowed_cidrs'))}`)
      .value.split('\n')
      .map((s) => s.trim())
      .filter(Boolean);
    body.allowed_cidrs = cidrs.length > 0 ? cidrs : null;
    void updateKey(key, body, `Controls of ${keyName(key)} saved.`, alert);
  });
  return h('div', { class: 'key-controls' }, h('p', { class: 'facts-title', text: 'Controls' }), facts, form);
}

// Rotate --------------------------------------------------------------------------------------

/** `scope`: the caller's own key, or (`service`) one of the org's service keys. */
function openRotate(key, trigger, scope = 'own') {
  state.dialogTarget = { key, scope };
  $('rotate-text').textContent =
    `“${keyName(key)}” gets a new secret, shown once. The current secret keeps working for the grace period you choose, then stops.`;
  $('rotate-grace').value = '86400';
  clearAlert($('rotate-error'));
  openDialog($('rotate-dialog'), trigger);
  $('rotate-grace').focus();
}

async function confirmRotate(event) {
  event.preventDefault();
  const target = state.dialogTarget;
  if (!target) return;
  const button = $('rotate-confirm');
  button.disabled = true;
  button.textContent = 'Rotating…';
  try {
    const id = encodeURIComponent(target.key.id);
    const path =
      target.scope === 'service'
        ? `/orgs/${encodeURIComponent(state.me.org_id)}/service-keys/${id}/rotate`
        : `/api-keys/${id}/rotate`;
    const rotated = await api('POST', path, { grace_period_seconds: Number($('rotate-grace').value) });
    const { key, ...record } = rotated;
    if (target.scope === 'service') {
      await loadServiceKeys();
      const dialog = $('rotate-dialog');
      dialog.returnFocus = null;
      dialog.close();
      openReveal(key, record, 'rotated');
      return;
    }
    const merged = { ...target.key, ...record };
    state.keys = state.keys.map((k) => (k.id === merged.id ? merged : k));
    renderKeys();
    const dialog = $('rotate-dialog');
    dialog.returnFocus = null;
    dialog.close();
    openReveal(key, merged, 'rotated');
    void refreshOrgPanels();
  } catch (err) {
    if (handledElsewhere(err)) return;
    showAlert($('rotate-error'), err);
  } finally {
    button.disabled = false;
    button.textContent = 'Rotate key';
  }
}

// ---------------------------------------------------------------------------------------------
// Usage: refreshed on focus, every minute, and just after UTC midnight.

let midnightTimer = 0;

async function loadUsage({ quiet = false } = {}) {
  if (!state.me) return;
  const section = $('usage');
  if (!quiet) section.setAttribute('aria-busy', 'true');
  try {
    const [usage, daily] = await Promise.all([
      api('GET', '/usage'),
      api('GET', '/usage/daily').catch((err) => (isMissingRoute(err) ? null : Promise.reject(err))),
    ]);
    clearAlert($('usage-error'));
    state.usage = usage;
    state.daily = daily ? listOf(daily, 'days', 'daily', 'usage', 'items') : null;
    renderUsage();
    scheduleMidnight(usage.resets_at);
  } catch (err) {
    if (handledElsewhere(err)) return;
    if (!state.usage) {
      show($('usage-body'), false);
      show($('usage-plan'), false);
    }
    showAlert($('usage-error'), err, () => void loadUsage());
  } finally {
    show($('usage-skeleton'), false);
    section.setAttribute('aria-busy', 'false');
  }
}

function scheduleMidnight(resetsAt) {
  clearTimeout(midnightTimer);
  const wait = Date.parse(resetsAt) - Date.now() + 1000;
  if (Number.isFinite(wait) && wait > 0 && wait < 2 * DAY * 1000)
    midnightTimer = setTimeout(() => void loadUsage({ quiet: true }), wait);
}

/** A number from a daily row: the first of the named fields, `{used}` objects included. */
function numberOf(row, names) {
  for (const name of names) {
    const v = row?.[name];
    if (typeof v === 'number') return v;
    if (v && typeof v.used === 'number') return v.used;
  }
  return 0;
}

/** One value per day: the server's days (oldest first, zeros included), else the last 30 with zeros. */
function seriesOf(rows, pick) {
  if (rows.length > 0) return rows.map((r) => ({ day: String(r.day ?? r.date ?? '').slice(0, 10), value: pick(r) }));
  return last30Days().map((day) => ({ day, value: 0 }));
}

/** Everything a day's row charged: the query wallet, imports and captures. */
const totalOf = (row) => numberOf(row, ['mcp_queries']) + numberOf(row, ['imports']) + numberOf(row, ['captures']);

/** A 30-day bar chart: inline SVG for the eye, a table for screen readers. */
function chart(title, series, id) {
  const max = Math.max(1, ...series.map((p) => p.value));
  const width = 300;
  const height = 48;
  const bar = width / series.length;
  const plot = svg('svg', {
    viewBox: `0 0 ${width} ${height}`,
    preserveAspectRatio: 'none',
    class: 'chart',
    'aria-hidden': 'true',
    focusable: 'false',
  });
  for (const [i, p] of series.entries()) {
    const barHeight = p.value === 0 ? 1 : Math.max(2, (p.value / max) * (height - 2));
    plot.append(
      svg('rect', {
        x: (i * bar + 1).toFixed(2),
        y: (height - barHeight).toFixed(2),
        width: (bar - 2).toFixed(2),
        height: barHeight.toFixed(2),
        class: p.value === 0 ? 'bar zero' : 'bar',
      }),
    );
  }
  const total = series.reduce((sum, p) => sum + p.value, 0);
  const table = h(
    'table',
    { class: 'visually-hidden', id: `table-${id}` },
    h('caption', { text: title }),
    h('thead', {}, h('tr', {}, h('th', { scope: 'col', text: 'Day (UTC)' }), h('th', { scope: 'col', text: 'Count' }))),
    h(
      'tbody',
      {},
      ...series.map((p) =>
        h('tr', {}, h('th', { scope: 'row', text: p.day }), h('td', { text: p.value.toLocaleString('en') })),
      ),
    ),
  );
  return h(
    'figure',
    { class: 'chart-figure', 'data-chart': id },
    plot,
    h('figcaption', { class: 'hint' }, h('span', { text: `Last 30 days: ${total.toLocaleString('en')} in total` })),
    table,
  );
}

const METERS = [
  { id: 'queries', label: 'Query wallet', noun: 'queries', field: 'mcp_queries', daily: ['mcp_queries', 'queries'] },
  { id: 'imports', label: 'Imports', noun: 'imports', field: 'imports', daily: ['imports'] },
  { id: 'captures', label: 'Captures', noun: 'captures', field: 'captures', daily: ['captures'] },
];

function meter(spec, { used, limit }, note) {
  const { id, label } = spec;
  const unlimited = limit === null || limit === undefined;
  const ratio = unlimited || limit === 0 ? 0 : used / limit;
  const level = unlimited ? '' : ratio >= 1 ? 'full' : ratio >= 0.8 ? 'high' : '';
  const fmt = (n) => n.toLocaleString('en');
  const warning =
    level === 'full'
      ? `Daily limit reached: more ${spec.noun} are refused until the reset.`
      : level === 'high'
        ? `${Math.floor(ratio * 100)} % of today's limit used.`
        : '';
  let history = null;
  if (state.daily) {
    const pick =
      id === 'queries'
        ? (row) => numberOf(row, spec.daily) || numberOf(row, ['asks']) + numberOf(row, ['retrieves'])
        : (row) => numberOf(row, spec.daily);
    history = chart(`${label} per day, last 30 days`, seriesOf(state.daily, pick), id);
  }
  return h(
    'div',
    { class: `meter ${level}`, 'data-meter': id },
    h(
      'div',
      { class: 'meter-head' },
      h('span', { id: `meter-${id}-label`, class: 'meter-label', text: label }),
      h('span', {
        class: 'meter-value',
        text: unlimited ? `${fmt(used)} used · Unlimited` : `${fmt(used)} / ${fmt(limit)}`,
      }),
    ),
    unlimited
      ? h('div', { class: 'meter-unlimited', 'aria-hidden': 'true' })
      : h('progress', {
          max: String(Math.max(limit, 1)),
          value: String(Math.min(used, limit)),
          'aria-labelledby': `meter-${id}-label`,
          'aria-valuetext': `${fmt(used)} of ${fmt(limit)} used`,
        }),
    h('p', { class: `meter-warning ${level}`, hidden: !warning, text: warning }),
    note ? h('p', { class: 'hint', text: note }) : null,
    history,
  );
}

function renderUsage() {
  const u = state.usage;
  if (!u) return;
  const plan = $('usage-plan');
  plan.textContent = planName(u.plan);
  plan.dataset.plan = u.plan;
  show(plan, true);
  $('usage-meters').replaceChildren(
    ...METERS.map((spec) =>
      meter(
        spec,
        u[spec.field],
        spec.id === 'queries'
          ? `Asks ${u.breakdown.asks.toLocaleString('en')} · Retrieves ${u.breakdown.retrieves.toLocaleString('en')}`
          : null,
      ),
    ),
  );
  $('usage-reset').replaceChildren(
    h('time', { datetime: u.resets_at, title: exactTime(u.resets_at), text: resetText(u.resets_at) }),
  );
  show($('usage-body'), true);
}

// ---------------------------------------------------------------------------------------------
// Owners and admins: every key in the org, the audit log, webhooks (each where its route exists).

const isManager = () => state.me && (state.me.org_role === 'owner' || state.me.org_role === 'admin');

/** Loads the owners' and admins' blocks; true when at least one of their routes exists. */
async function loadOrgAdmin() {
  if (!isManager()) return false;
  await loadMembers();
  const shown = await Promise.all([
    loadApprovals(),
    loadPolicy(),
    loadOrgKeys(),
    loadServiceKeys(),
    loadAudit(),
    loadWebhooks(),
  ]);
  return shown.some(Boolean);
}

/** Member e-mails by user id, to name who minted a key or acted in the audit log. */
async function loadMembers() {
  state.members = new Map();
  try {
    const data = await api('GET', `/orgs/${encodeURIComponent(state.me.org_id)}/members?limit=100`);
    for (const m of listOf(data, 'members', 'items')) if (m.user_id && m.email) state.members.set(m.user_id, m.email);
  } catch (err) {
    if (!handledElsewhere(err)) state.members = new Map();
  }
}

function dataTable(caption, headers, rows) {
  return h(
    'table',
    { class: 'data-table' },
    h('caption', { class: 'visually-hidden', text: caption }),
    h('thead', {}, h('tr', {}, ...headers.map((label) => h('th', { scope: 'col' }, label)))),
    h('tbody', {}, ...rows),
  );
}

/** Loads one admin list; false when the route is not on this deployment (the block stays hidden). */
async function loadAdminList({ block, error, list, more, path, cursor, render, emptyText, append }) {
  clearAlert($(error));
  try {
    const data = await api('GET', path);
    render(data, append);
    if ($(list).childElementCount === 0) $(list).replaceChildren(h('p', { class: 'empty muted', text: emptyText }));
    if (more) show($(more), Boolean(data && typeof data.next_cursor === 'string'));
    show($(block), true);
    return data && typeof data.next_cursor === 'string' ? data.next_cursor : null;
  } catch (err) {
    if (handledElsewhere(err)) return undefined;
    if (isMissingRoute(err) || (err instanceof ApiError && err.status === 403)) {
      show($(block), false);
      return false;
    }
    show($(block), true);
    showAlert(
      $(error),
      err,
      () => void loadAdminList({ block, error, list, more, path, cursor, render, emptyText, append }),
    );
    return null;
  }
}

// The org's key policy (owners set it, admins read it) and the keys it holds for approval.

async function loadApprovals() {
  const org = encodeURIComponent(state.me.org_id);
  const next = await loadAdminList({
    block: 'approvals-block',
    error: 'approvals-error',
    list: 'approvals-list',
    more: null,
    path: `/orgs/${org}/api-keys?state=pending&limit=100`,
    emptyText: 'No keys are waiting for approval.',
    render: (data) => {
      const keys = listOf(data, 'keys', 'items');
      const count = $('approvals-count');
      count.textContent = String(keys.length);
      count.setAttribute('aria-label', `${keys.length} waiting`);
      show(count, keys.length > 0);
      const rows = keys.map((key) => {
        const owner = key.owner_email ?? state.members.get(key.user_id) ?? key.user_id ?? '';
        const decide = (what) => (e) => void decideKey(key, what, e.currentTarget);
        return h(
          'tr',
          { 'data-pending-key-id': key.id },
          h('th', { scope: 'row', 'data-label': 'Name' }, h('span', { class: 'name-text', text: keyName(key) })),
          h('td', { 'data-label': 'Minted by', text: owner }),
          h('td', { 'data-label': 'Scopes', text: (key.scopes ?? []).join(', ') }),
          h(
            'td',
            { 'data-label': 'Actions', class: 'cell-actions' },
            h('button', {
              type: 'button',
              class: 'button primary small',
              'aria-label': `Approve ${keyName(key)} (minted by ${owner})`,
              text: 'Approve',
              onclick: decide('approve'),
            }),
            h('button', {
              type: 'button',
              class: 'button danger small',
              'aria-label': `Deny ${keyName(key)} (minted by ${owner})`,
              text: 'Deny',
              onclick: decide('deny'),
            }),
          ),
        );
      });
      $('approvals-list').replaceChildren(
        ...(rows.length
          ? [
              dataTable(
                'Keys waiting for approval',
                ['Name', 'Minted by', 'Scopes', h('span', { class: 'visually-hidden', text: 'Actions' })],
                rows,
              ),
            ]
          : []),
      );
    },
  });
  return next !== false;
}

async function decideKey(key, what, button) {
  button.disabled = true;
  clearAlert($('approvals-error'));
  try {
    await api('POST', `/orgs/${encodeURIComponent(state.me.org_id)}/api-keys/${encodeURIComponent(key.id)}/${what}`);
    announce(what === 'approve' ? `${keyName(key)} approved.` : `${keyName(key)} denied.`);
  } catch (err) {
    if (!handledElsewhere(err)) showAlert($('approvals-error'), err);
  }
  button.disabled = false;
  await Promise.all([loadApprovals(), loadOrgKeys()]);
  $('approvals-title').focus();
}

async function loadPolicy() {
  const org = encodeURIComponent(state.me.org_id);
  clearAlert($('policy-error'));
  try {
    const policy = await api('GET', `/orgs/${org}/key-policy`);
    state.policy = policy;
    $('policy-lifetime').value = policy.max_lifetime_days ?? '';
    $('policy-stale').value = policy.stale_after_days ?? '';
    $('policy-require-expiry').checked = Boolean(policy.require_expiry);
    $('policy-approve-write').checked = (policy.approval_required_for ?? []).includes('decisions:write');
    const owner = state.me.org_role === 'owner';
    for (const el of $('policy-form').querySelectorAll('input, button')) el.disabled = !owner;
    show($('policy-note'), !owner);
    show($('policy-block'), true);
    return true;
  } catch (err) {
    if (handledElsewhere(err)) return false;
    show($('policy-block'), false);
    return false;
  }
}

async function onPolicySave(event) {
  event.preventDefault();
  clearAlert($('policy-error'));
  $('policy-status').textContent = '';
  const days = (id) => ($(id).value.trim() === '' ? null : Number($(id).value));
  const held = new Set(state.policy?.approval_required_for ?? []);
  if ($('policy-approve-write').checked) held.add('decisions:write');
  else held.delete('decisions:write');
  const body = {
    max_lifetime_days: days('policy-lifetime'),
    require_expiry: $('policy-require-expiry').checked,
    stale_after_days: days('policy-stale'),
    // Not edited here: kept as they are.
    allowed_scopes_by_role: state.policy?.allowed_scopes_by_role ?? null,
    approval_required_for: [...held],
  };
  try {
    state.policy = await api('PUT', `/orgs/${encodeURIComponent(state.me.org_id)}/key-policy`, body);
    $('policy-status').textContent = 'Policy saved.';
    await Promise.all([loadKeys(), loadOrgKeys()]);
  } catch (err) {
    if (!handledElsewhere(err)) showAlert($('policy-error'), err);
  }
}

async function loadOrgKeys({ more = false } = {}) {
  const org = encodeURIComponent(state.me.org_id);
  const query = new URLSearchParams({ limit: String(PAGE_SIZE) });
  if (more && state.orgKeysCursor) query.set('cursor', state.orgKeysCursor);
  const next = await loadAdminList({
    block: 'org-keys-block',
    error: 'org-keys-error',
    list: 'org-keys-list',
    more: 'org-keys-more',
    path: `/orgs/${org}/api-keys?${query}`,
    emptyText: 'No keys in this organisation yet.',
    render: (data) => {
      const keys = listOf(data, 'keys', 'items');
      const rows = keys.map((key) => {
        const badge = keyBadge(key);
        const email = key.owner_email ?? state.members.get(key.user_id) ?? key.user_id ?? '';
        const owner = key.owner_status === 'removed' ? `${email} (no longer a member)` : email;
        return h(
          'tr',
          { 'data-org-key-id': key.id, 'data-status': keyStatus(key) },
          h('th', { scope: 'row', 'data-label': 'Name' }, h('span', { class: 'name-text', text: keyName(key) })),
          h('td', { 'data-label': 'Minted by', text: owner }),
          h('td', { 'data-label': 'Key' }, h('code', { class: 'masked-key', text: maskedKey(key) })),
          h(
            'td',
            { 'data-label': 'Status' },
            h('span', { class: `badge status ${badge.variant}`, title: badge.title, text: badge.text }),
          ),
          h('td', { 'data-label': 'Last used' }, timeCell(key.last_used_at, 'Never')),
          h(
            'td',
            { 'data-label': 'Actions', class: 'cell-actions' },
            key.revoked_at
              ? null
              : h('button', {
                  type: 'button',
                  class: 'button danger small',
                  'aria-label': `Revoke ${keyName(key)} (minted by ${owner})`,
                  text: 'Revoke',
                  onclick: (e) => openRevoke(key, e.currentTarget, 'org'),
                }),
          ),
        );
      });
      const list = $('org-keys-list');
      const body = more ? list.querySelector('tbody') : null;
      if (body) body.append(...rows);
      else
        list.replaceChildren(
          ...(rows.length
            ? [
                dataTable(
                  'Every key in this organisation',
                  [
                    'Name',
                    'Minted by',
                    'Key',
                    'Status',
                    'Last used',
                    h('span', { class: 'visually-hidden', text: 'Actions' }),
                  ],
                  rows,
                ),
              ]
            : []),
        );
    },
  });
  if (next !== false && next !== undefined) state.orgKeysCursor = next;
  return next !== false;
}

// Service keys: the org's own keys, for owners and admins ---------------------------------------

/** Who minted a service key: you, a member's e-mail, or (no longer a member) "a former member". */
const creatorName = (key) =>
  !key.created_by
    ? 'the operator'
    : key.created_by === state.me?.user_id
      ? 'you'
      : (state.members?.get(key.created_by) ?? 'a former member');

async function loadServiceKeys({ more = false } = {}) {
  const org = encodeURIComponent(state.me.org_id);
  const query = new URLSearchParams({ limit: String(PAGE_SIZE) });
  if (more && state.serviceKeysCursor) query.set('cursor', state.serviceKeysCursor);
  const next = await loadAdminList({
    block: 'service-keys-block',
    error: 'service-keys-error',
    list: 'service-keys-list',
    more: 'service-keys-more',
    path: `/orgs/${org}/service-keys?${query}`,
    emptyText: 'No service keys yet.',
    render: (data) => {
      const rows = listOf(data, 'keys', 'items').map((key) => {
        const badge = keyBadge(key);
        const name = keyName(key);
        return h(
          'tr',
          { 'data-service-key-id': key.id, 'data-status': keyStatus(key) },
          h(
            'th',
            { scope: 'row', 'data-label': 'Name', tabindex: '-1' },
            h('span', { class: 'name-text', text: name }),
          ),
          h('td', { 'data-label': 'Created by', text: creatorName(key) }),
          h('td', { 'data-label': 'Key' }, h('code', { class: 'masked-key', text: maskedKey(key) })),
          h(
            'td',
            { 'data-label': 'Status' },
            h('span', { class: `badge status ${badge.variant}`, title: badge.title, text: badge.text }),
          ),
          h('td', { 'data-label': 'Last used' }, timeCell(key.last_used_at, 'Never')),
          h(
            'td',
            { 'data-label': 'Actions', class: 'cell-actions' },
            keyStatus(key) === 'active'
              ? h('button', {
                  type: 'button',
                  class: 'button secondary small',
                  'aria-label': `Rotate service key ${name}`,
                  text: 'Rotate',
                  onclick: (e) => openRotate(key, e.currentTarget, 'service'),
                })
              : null,
            key.revoked_at
              ? null
              : h('button', {
                  type: 'button',
                  class: 'button danger small',
                  'aria-label': `Revoke service key ${name}`,
                  text: 'Revoke',
                  onclick: (e) => openRevoke(key, e.currentTarget, 'service'),
                }),
          ),
        );
      });
      const list = $('service-keys-list');
      const body = more ? list.querySelector('tbody') : null;
      if (body) body.append(...rows);
      else
        list.replaceChildren(
          ...(rows.length
            ? [
                dataTable(
                  'Service keys of this organisation',
                  [
                    'Name',
                    'Created by',
                    'Key',
                    'Status',
                    'Last used',
                    h('span', { class: 'visually-hidden', text: 'Actions' }),
                  ],
                  rows,
                ),
              ]
            : []),
        );
    },
  });
  if (next !== false && next !== undefined) state.serviceKeysCursor = next;
  return next !== false;
}

async function onCreateServiceKey(event) {
  event.preventDefault();
  const submit = $('service-key-submit');
  const scopes = [...document.querySelectorAll('input[name="service-scope"]:checked')].map((box) => box.value);
  const body = { name: $('service-key-name').value };
  if (scopes.length > 0) body.scopes = scopes;
  clearAlert($('service-keys-error'));
  submit.disabled = true;
  try {
    const minted = await api('POST', `/orgs/${encodeURIComponent(state.me.org_id)}/service-keys`, body);
    const { key, ...record } = minted;
    $('service-key-name').value = '';
    await Promise.all([loadServiceKeys(), loadOrgKeys()]);
    openReveal(key, record, 'created');
  } catch (err) {
    if (handledElsewhere(err)) return;
    showAlert($('service-keys-error'), err);
    $('service-keys-error').focus();
  } finally {
    submit.disabled = false;
  }
}

/** The audit filter's actions, from the route's own OpenAPI enum (so new actions appear by themselves). */
function fillAuditActions() {
  const select = /** @type {HTMLSelectElement} */ ($('audit-action'));
  if (select.options.length > 1) return;
  const params = state.paths?.['/orgs/{org_id}/audit-events']?.get?.parameters ?? [];
  const actions = params.find((p) => p.name === 'action')?.schema?.enum ?? [];
  select.append(...actions.map((a) => h('option', { value: a, text: a })));
}

/** "you", a member's e-mail (GET /orgs/{id}/members, where it exists), or what the event says. */
function actorName(actor) {
  if (!actor) return '';
  if (actor.type !== 'user') return actor.source ? `${actor.type} (${actor.source})` : actor.type;
  if (actor.id === state.me?.user_id) return 'you';
  return state.members?.get(actor.id) ?? actor.id ?? 'user';
}

async function loadAudit({ more = false } = {}) {
  fillAuditActions();
  const org = encodeURIComponent(state.me.org_id);
  const query = new URLSearchParams({ limit: String(PAGE_SIZE) });
  const action = $('audit-action').value;
  if (action) query.set('action', action);
  const sinceDays = Number($('audit-since').value);
  if (sinceDays) query.set('since', new Date(Date.now() - sinceDays * DAY * 1000).toISOString());
  if (more && state.auditCursor) query.set('cursor', state.auditCursor);
  const next = await loadAdminList({
    block: 'audit-block',
    error: 'audit-error',
    list: 'audit-list',
    more: 'audit-more',
    path: `/orgs/${org}/audit-events?${query}`,
    emptyText: action
      ? 'No events match this filter. Clear it to see every event.'
      : 'Nothing has happened in this organisation yet.',
    render: (data) => {
      const events = listOf(data, 'events', 'audit_events', 'items');
      const rows = events.map((e) => {
        const at = e.created_at ?? e.occurred_at;
        const actor = actorName(e.actor);
        // A key is named as its owner named it (the event's details carry the name), else by id.
        const named = typeof e.details?.name === 'string' && e.details.name ? `“${e.details.name}”` : e.target?.id;
        const target = e.target ? `${e.target.type.replace('_', ' ')} ${named ?? ''}` : '';
        return h(
          'tr',
          {},
          h('td', { 'data-label': 'When' }, timeCell(at, '')),
          h('th', { scope: 'row', 'data-label': 'Action' }, h('code', { text: e.action ?? e.type ?? '' })),
          h('td', { 'data-label': 'Who', text: String(actor) }),
          h('td', { 'data-label': 'Target' }, h('code', { class: 'masked-key', text: String(target) })),
        );
      });
      const list = $('audit-list');
      const body = more ? list.querySelector('tbody') : null;
      if (body) body.append(...rows);
      else
        list.replaceChildren(
          ...(rows.length ? [dataTable('Audit log, newest first', ['When', 'Action', 'Who', 'Target'], rows)] : []),
        );
    },
  });
  if (next !== false && next !== undefined) state.auditCursor = next;
  return next !== false;
}

async function loadWebhooks() {
  const org = encodeURIComponent(state.me.org_id);
  const next = await loadAdminList({
    block: 'webhooks-block',
    error: 'webhooks-error',
    list: 'webhooks-list',
    more: null,
    path: `/orgs/${org}/webhooks`,
    emptyText: 'No webhook endpoints yet. Add one through the API to receive key and usage events.',
    render: (data) => {
      const hooks = listOf(data, 'webhooks', 'endpoints', 'items');
      const rows = hooks.map((w) =>
        h(
          'tr',
          { 'data-webhook-id': w.id },
          h(
            'th',
            { scope: 'row', 'data-label': 'URL' },
            h('code', { class: 'masked-key', text: w.url ?? '' }),
            w.description ? h('span', { class: 'hint block', text: w.description }) : null,
          ),
          h('td', {
            'data-label': 'Events',
            text: Array.isArray(w.event_types) && w.event_types.length ? w.event_types.join(', ') : 'All events',
          }),
          h('td', { 'data-label': 'State' }, webhookBadge(w)),
          h(
            'td',
            { 'data-label': 'Deliveries', class: 'cell-actions' },
            h('button', {
              type: 'button',
              class: 'button ghost small',
              'aria-label': `Deliveries to ${w.url}`,
              text: 'Deliveries',
              'aria-expanded': 'false',
              onclick: (e) => void toggleDeliveries(w, e.currentTarget),
            }),
          ),
        ),
      );
      $('webhooks-list').replaceChildren(
        ...(rows.length
          ? [
              dataTable(
                'Webhook endpoints',
                ['URL', 'Events', 'State', h('span', { class: 'visually-hidden', text: 'Deliveries' })],
                rows,
              ),
            ]
          : []),
      );
    },
  });
  return next !== false;
}

function webhookBadge(w) {
  if (w.enabled === false) return h('span', { class: 'badge status expired', text: 'Disabled' });
  if (w.failing_since)
    return h('span', {
      class: 'badge status revoked',
      title: `Failing since ${exactTime(w.failing_since)}`,
      text: 'Failing',
    });
  return h('span', { class: 'badge status active', text: 'Enabled' });
}

async function toggleDeliveries(hook, button) {
  const row = button.closest('tr');
  const existing = row.nextElementSibling?.classList.contains('details-row') ? row.nextElementSibling : null;
  if (existing) {
    existing.remove();
    button.setAttribute('aria-expanded', 'false');
    return;
  }
  const cell = h('td', { colspan: '4' }, h('div', { class: 'skeleton-chart', 'aria-hidden': 'true' }));
  row.after(h('tr', { class: 'details-row' }, cell));
  button.setAttribute('aria-expanded', 'true');
  try {
    const data = await api(
      'GET',
      `/orgs/${encodeURIComponent(state.me.org_id)}/webhooks/${encodeURIComponent(hook.id)}/deliveries?limit=20`,
    );
    const deliveries = listOf(data, 'deliveries', 'items');
    cell.replaceChildren(
      deliveries.length
        ? dataTable(
            `Latest deliveries to ${hook.url}`,
            ['When', 'Event', 'Attempt', 'Result'],
            deliveries.map((d) =>
              h(
                'tr',
                {},
                h('td', {}, timeCell(d.created_at ?? d.attempted_at ?? d.delivered_at, '')),
                h('th', { scope: 'row' }, h('code', { text: d.event_type ?? '' })),
                h('td', { text: String(d.attempt ?? '') }),
                h('td', {
                  text: `${d.status ?? ''}${d.response_status ? ` (HTTP ${d.response_status})` : ''}${d.error ? `: ${d.error}` : ''}`,
                }),
              ),
            ),
          )
        : h('p', { class: 'muted', text: 'No deliveries yet.' }),
    );
    announce(`${deliveries.length} deliveries.`);
  } catch (err) {
    if (handledElsewhere(err)) return;
    const alert = h('div', { class: 'alert' });
    cell.replaceChildren(alert);
    showAlert(alert, err);
  }
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
    setFieldError(
      'signin-error',
      input,
      'That is an API key. Managing keys needs a session token (a JWT) instead: an API key can never create, list or revoke keys.',
    );
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

function onPickOrgById(event) {
  event.preventDefault();
  const input = $('org-id');
  const org = input.value.trim();
  if (!UUID_RE.test(org)) {
    setFieldError('org-error', input, 'Enter the organisation ID, a UUID such as 3f2c5e1a-…');
    input.focus();
    return;
  }
  chooseOrg(org.toLowerCase());
}

/** Refreshes what goes stale while the page stays open: usage, and relative times of keys. */
function refreshQuietly() {
  if (!state.me || $('app').hidden || document.visibilityState !== 'visible') return;
  void loadUsage({ quiet: true });
  const busy =
    [...document.querySelectorAll('dialog')].some((d) => d.open) || $('keys-table').contains(document.activeElement);
  if (!busy && $('keys-error').hidden) renderKeys();
}

function init() {
  let theme = null;
  try {
    theme = localStorage.getItem(THEME_KEY);
  } catch {
    theme = null;
  }
  applyTheme(theme === 'dark' || theme === 'light' ? theme : null);
  window
    .matchMedia('(prefers-color-scheme: dark)')
    .addEventListener('change', () => applyTheme(document.documentElement.dataset.theme));
  $('theme-toggle').addEventListener('click', toggleTheme);

  $('signin-form').addEventListener('submit', onSignIn);
  $('org-form').addEventListener('submit', onPickOrgById);
  $('org-switch').addEventListener('change', (e) => {
    if (e.currentTarget.value) chooseOrg(e.currentTarget.value);
  });
  $('no-org-retry').addEventListener('click', () => void start());
  $('sign-out').addEventListener('click', () => signOut());
  window.addEventListener('popstate', () => {
    if (state.token) void start();
  });

  $('create-open').addEventListener('click', (e) => openCreate(e.currentTarget));
  $('empty-create').addEventListener('click', (e) => openCreate(e.currentTarget));
  $('create-form').addEventListener('submit', onCreate);
  $('create-cancel').addEventListener('click', () => $('create-dialog').close());
  $('key-name').addEventListener('input', updateCounter);
  $('inactive-toggle').addEventListener('click', toggleInactive);
  $('keys-more').addEventListener('click', () => void loadKeys({ more: true }));

  $('reveal-copy').addEventListener('click', () => void copyKey());
  $('reveal-close').addEventListener('click', requestRevealClose);
  $('reveal-keep').addEventListener('click', keepRevealOpen);
  $('reveal-discard').addEventListener('click', closeReveal);
  $('reveal-dialog').addEventListener('close', onRevealClosed);
  // Escape asks first, like Done (the browser would otherwise close the dialog at once).
  $('reveal-dialog').addEventListener('keydown', (e) => {
    if (e.key === 'Escape') {
      e.preventDefault();
      if ($('reveal-confirm').hidden) requestRevealClose();
      else keepRevealOpen();
    }
  });
  // Any other close request (the browser's own cancel): the same path, so the key is forgotten at once.
  $('reveal-dialog').addEventListener('cancel', (e) => {
    e.preventDefault();
    requestRevealClose();
  });

  $('revoke-form').addEventListener('submit', (e) => void confirmRevoke(e));
  $('revoke-name').addEventListener('input', onRevokeNameInput);
  $('revoke-cancel').addEventListener('click', () => $('revoke-dialog').close());
  $('rotate-form').addEventListener('submit', (e) => void confirmRotate(e));
  $('service-key-form').addEventListener('submit', (e) => void onCreateServiceKey(e));
  $('service-keys-more').addEventListener('click', () => void loadServiceKeys({ more: true }));
  $('rotate-cancel').addEventListener('click', () => $('rotate-dialog').close());
  for (const dialog of document.querySelectorAll('dialog')) {
    dialog.addEventListener('keydown', trapFocus);
    if (dialog.id !== 'reveal-dialog') dialog.addEventListener('close', () => restoreFocus(dialog));
  }

  $('org-keys-more').addEventListener('click', () => void loadOrgKeys({ more: true }));
  $('policy-form').addEventListener('submit', (e) => void onPolicySave(e));
  $('audit-more').addEventListener('click', () => void loadAudit({ more: true }));
  $('audit-filters').addEventListener('submit', (e) => {
    e.preventDefault();
    void loadAudit().then(() => announce('Audit log filtered.'));
  });

  window.addEventListener('focus', refreshQuietly);
  document.addEventListener('visibilitychange', refreshQuietly);
  setInterval(refreshQuietly, USAGE_REFRESH_MS);

  // An org chosen before the URL carried it (earlier versions kept it in sessionStorage).
  sessionStorage.removeItem(LEGACY_ORG_KEY);
  state.token = sessionStorage.getItem(SESSION_KEY);
  if (state.token) void start();
  else showSignIn();
}

init();
