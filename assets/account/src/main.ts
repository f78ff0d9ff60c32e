// The account page: API keys (mint with a one-time reveal, list, rotate, revoke, controls), usage,
// and for owners and admins the organisation's sections (approvals, key policy, every key,
// service keys, audit log, webhooks), each reached from the sections' menu and named in the URL.
// Every call goes through the typed client (api.ts), pinned to one API version. Routes that a
// deployment does not have (404, or absent from /openapi.json) hide their feature.
import { createApi } from './api.js';
import { ApiDocument, loadApiDocument } from './api-document.js';
import { isManager, me, newSession, type PageContext } from './context.js';
import { initDialogs } from './dialogs.js';
import { announce, byId, clearAlert, h, setFieldError, show, showAlert } from './dom.js';
import { errorStatus, handledElsewhere, isMissingRoute, PageError } from './errors.js';
import { configureCreateForm, initCreateDialog } from './keys/create-dialog.js';
import { initKeyDialogs } from './keys/key-dialogs.js';
import { KeysPanel } from './keys/keys-panel.js';
import { initNarrowDialog } from './keys/narrow-dialog.js';
import { loadScopeChoices } from './keys/scopes.js';
import { auditList } from './org/audit.js';
import { ApprovalsPanel } from './org/approvals.js';
import { loadMembers } from './org/members.js';
import { orgKeysList } from './org/org-keys.js';
import { loadOrgVerifications } from './org/org-verifications.js';
import { PolicyPanel } from './org/policy.js';
import { configureServiceKeyForm, initServiceKeyForm, serviceKeysList } from './org/service-keys.js';
import { loadWebhooks } from './org/webhooks.js';
import { initReveal } from './reveal.js';
import { Sections, type Section } from './sections.js';
import * as signin from './signin.js';
import { initTheme } from './theme.js';
import { UsagePanel } from './usage/usage-panel.js';

const USAGE_REFRESH_MS = 60_000;

/** The route each organisation section lists from: shown at once for owners and admins where the document has it. */
const ORG_SECTIONS: readonly [Section, string][] = [
  ['approvals', '/orgs/{org_id}/api-keys/{keyID}/approve'],
  ['policy', '/orgs/{org_id}/key-policy'],
  ['org-keys', '/orgs/{org_id}/api-keys'],
  ['service-keys', '/orgs/{org_id}/service-keys'],
  ['audit', '/orgs/{org_id}/audit-events'],
  ['webhooks', '/orgs/{org_id}/webhooks'],
];

function createPage(): PageContext {
  const session = newSession(sessionStorage.getItem(signin.SESSION_KEY));
  const sections = new Sections(document, (current) => {
    show(byId('create-open'), current === 'keys' && (ctx.panels.keys?.enabled ?? true));
  });
  const ctx: PageContext = {
    session,
    sections,
    panels: {},
    doc: new ApiDocument(),
    api: createApi({
      token: () => session.token,
      onUnauthorized: (message) => sessionRefused(message),
    }),
  };
  return ctx;
}

const ctx = createPage();
const keys = new KeysPanel(ctx);
const usage = new UsagePanel(ctx);
const approvals = new ApprovalsPanel(ctx);
const policy = new PolicyPanel(ctx);
const orgKeys = orgKeysList(ctx);
const serviceKeys = serviceKeysList(ctx);
const audit = auditList(ctx);
ctx.panels = { keys, orgKeys, serviceKeys, audit, approvals };

/** A 401 anywhere means the token is no good any more: forget it and ask for one. */
function sessionRefused(message: string): void {
  signOut({ silent: true });
  setFieldError(
    'signin-error',
    byId('signin-token'),
    `The session token was not accepted: it may have expired or be invalid. Paste a new one. (Server: “${message}”)`,
  );
}

function signOut({ silent = false } = {}): void {
  sessionStorage.removeItem(signin.SESSION_KEY);
  sessionStorage.removeItem(signin.LEGACY_ORG_KEY);
  Object.assign(ctx.session, newSession());
  for (const dialog of document.querySelectorAll('dialog')) if (dialog.open) dialog.close();
  keys.reset();
  usage.reset();
  ctx.sections.reset();
  for (const id of ['banner', 'create-error']) clearAlert(byId(id));
  setFieldError('signin-error', byId('signin-token'), '');
  signin.showSignIn();
  if (!silent) signin.signedOutBanner();
}

function chooseOrg(orgId: string): void {
  signin.setOrgInUrl(orgId);
  void start();
}

/** GET /orgs, or null when this deployment has no such route. */
async function loadOrgs() {
  try {
    return (await ctx.api.orgs.list({ limit: 100 })).orgs;
  } catch (err) {
    if (isMissingRoute(err)) return null;
    throw err;
  }
}

/** The service could not be asked who we are (network, 429, 5xx): the token may be fine, so offer a retry. */
function showStartFailure(err: unknown): void {
  signin.showView('none');
  const banner = byId('banner');
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

/** The deployment's document, asked once. */
let documentLoad: Promise<ApiDocument> | null = null;

async function start(): Promise<void> {
  signin.showView('loading');
  clearAlert(byId('banner'));
  ctx.session.orgId = signin.orgFromUrl();
  let orgError = '';
  documentLoad ??= loadApiDocument();
  const orgs = loadOrgs().catch((err: unknown) => ({ failed: err }));
  const whoAmI = () => ctx.api.me({ orgId: ctx.session.orgId ?? undefined });
  let principal;
  try {
    principal = await whoAmI();
  } catch (err) {
    if (handledElsewhere(err)) return;
    if (!([404, 400].includes(errorStatus(err)) && ctx.session.orgId)) return showStartFailure(err);
    // The organisation in the link is not (or no longer) one of the user's: ask again.
    signin.setOrgInUrl(null, { push: false });
    ctx.session.orgId = null;
    orgError = 'The organisation in the link was not found, or you are not a member of it. Choose one of yours.';
    try {
      principal = await whoAmI();
    } catch (retryErr) {
      if (!handledElsewhere(retryErr)) showStartFailure(retryErr);
      return;
    }
  }
  const orgList = await orgs;
  if (orgList && 'failed' in orgList) {
    if (handledElsewhere(orgList.failed)) return;
    ctx.session.orgs = null;
  } else ctx.session.orgs = orgList;
  ctx.doc = await documentLoad;
  signin.renderIdentity(ctx, principal);
  if (!principal.org_id) {
    if (ctx.session.orgs && ctx.session.orgs.length === 0) {
      signin.showView('no-org');
      byId('no-org-title').focus();
      return;
    }
    signin.showOrgPicker(ctx, chooseOrg, orgError);
    return;
  }
  ctx.session.me = principal;
  await showApp(orgError);
}

async function showApp(orgError: string): Promise<void> {
  await loadScopeChoices(ctx);
  configureCreateForm(ctx);
  configureServiceKeyForm(ctx);
  ctx.sections.reset();
  if (isManager(ctx))
    for (const [section, path] of ORG_SECTIONS)
      if (ctx.doc.hasRoute(section === 'approvals' ? 'post' : 'get', path)) ctx.sections.setAvailable(section, true);
  ctx.sections.follow(location.hash);
  signin.showView('app');
  if (orgError) showAlert(byId('banner'), new PageError(404, orgError));
  byId('app-title').focus();
  announce(`API keys for ${signin.orgName(ctx, me(ctx).org_id)}.`);
  // Keys first, then usage once the keys have their final height, so nothing visible moves
  // while the page fills in (no layout shift). The organisation's sections load beside them.
  show(byId('usage'), false);
  const usageLoad = usage.load();
  const admin = loadOrgSections();
  await keys.load();
  show(byId('usage'), true);
  await Promise.all([usageLoad, admin]);
}

async function loadOrgSections(): Promise<void> {
  if (!isManager(ctx)) return;
  await loadMembers(ctx);
  await Promise.all([
    approvals.load(),
    policy.load(),
    orgKeys.load(),
    loadOrgVerifications(ctx),
    serviceKeys.load(),
    audit.load(),
    loadWebhooks(ctx),
  ]);
}

/** Refreshes what goes stale while the page stays open: usage, and relative times of keys. */
function refreshQuietly(): void {
  if (!ctx.session.me || byId('app').hidden || document.visibilityState !== 'visible') return;
  void usage.load({ quiet: true });
  keys.refreshTimes();
}

function init(): void {
  initTheme();
  initDialogs();
  initReveal();
  initKeyDialogs();
  initNarrowDialog();
  initCreateDialog(ctx);
  initServiceKeyForm(ctx);

  byId('signin-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const token = signin.readToken();
    if (token === false) return;
    ctx.session.token = token;
    sessionStorage.setItem(signin.SESSION_KEY, token);
    void start();
  });
  byId('org-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const org = signin.readOrgId();
    if (org) chooseOrg(org);
  });
  byId<HTMLSelectElement>('org-switch').addEventListener('change', (e) => {
    const value = (e.currentTarget as HTMLSelectElement).value;
    if (value) chooseOrg(value);
  });
  byId('no-org-retry').addEventListener('click', () => void start());
  byId('sign-out').addEventListener('click', () => signOut());
  // Back and Forward: another organisation starts over; another section just shows it.
  window.addEventListener('popstate', () => {
    if (ctx.session.token && signin.orgFromUrl() !== ctx.session.orgId) void start();
  });
  window.addEventListener('hashchange', () => ctx.sections.follow(location.hash, { focus: true }));

  window.addEventListener('focus', refreshQuietly);
  document.addEventListener('visibilitychange', refreshQuietly);
  setInterval(refreshQuietly, USAGE_REFRESH_MS);

  // An org chosen before the URL carried it (earlier versions kept it in sessionStorage).
  sessionStorage.removeItem(signin.LEGACY_ORG_KEY);
  if (ctx.session.token) void start();
  else signin.showSignIn();
}

init();
