// Who is signed in and where: the session token (this tab's sessionStorage), the organisation in
// the URL (?org=), the first screens (sign in, choose an organisation, none yet) and the top bar.
import type { Principal } from '../../../packages/client/src/types.js';
import { planName, type PageContext } from './context.js';
import { announce, byId, clearAlert, h, setFieldError, show, showAlert } from './dom.js';
import { PageError } from './errors.js';

export const SESSION_KEY = 'svc_session';
export const LEGACY_ORG_KEY = 'svc_org';
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export type View = 'loading' | 'signin' | 'org' | 'no-org' | 'app' | 'none';

export function showView(view: View): void {
  show(byId('loading'), view === 'loading');
  show(byId('signin'), view === 'signin');
  show(byId('org-picker'), view === 'org');
  show(byId('no-org'), view === 'no-org');
  show(byId('app'), view === 'app');
  show(byId('identity'), view === 'app' || view === 'org' || view === 'no-org');
  show(byId('sign-out'), view !== 'signin' && view !== 'loading');
}

export function showSignIn(): void {
  showView('signin');
  byId<HTMLInputElement>('signin-token').value = '';
  byId('signin-token').focus();
}

export function orgFromUrl(): string | null {
  const org = new URL(location.href).searchParams.get('org');
  return org && UUID_RE.test(org) ? org.toLowerCase() : null;
}

export function setOrgInUrl(orgId: string | null, { push = true } = {}): void {
  const url = new URL(location.href);
  if (orgId) url.searchParams.set('org', orgId);
  else url.searchParams.delete('org');
  if (url.href === location.href) return;
  if (push) history.pushState(null, '', url);
  else history.replaceState(null, '', url);
}

/** Several orgs: a list of them by name (GET /orgs), or the ID form where the route is missing. */
export function showOrgPicker(ctx: PageContext, choose: (orgId: string) => void, message: string): void {
  showView('org');
  const orgs = ctx.session.orgs;
  const list = byId('org-list');
  if (orgs) {
    list.replaceChildren(
      ...orgs.map((org) =>
        h(
          'li',
          {},
          h(
            'button',
            { type: 'button', class: 'org-choice', 'data-org-id': org.id, onclick: () => choose(org.id) },
            h('span', { class: 'org-name', text: org.name || org.id }),
            h(
              'span',
              { class: 'org-meta' },
              h('span', { class: 'badge role', text: org.role }),
              h('span', { class: 'badge plan', 'data-plan': org.plan, text: planName(org.plan) }),
            ),
          ),
        ),
      ),
    );
  }
  show(list, Boolean(orgs));
  show(byId('org-form'), !orgs);
  byId('org-picker-lead').textContent = orgs
    ? 'You belong to more than one organisation. Choose the one whose keys you want to manage; you can switch at any time from the top bar.'
    : 'You belong to more than one organisation. Enter the ID of the one you want to manage keys for.';
  setFieldError('org-error', byId('org-id'), orgs ? '' : message);
  if (message && orgs) showAlert(byId('banner'), new PageError(404, message));
  byId<HTMLInputElement>('org-id').value = '';
  byId('org-title').focus();
}

export function renderIdentity(ctx: PageContext, principal: Principal): void {
  const orgs = ctx.session.orgs;
  byId('identity-email').textContent = principal.email;
  byId('identity-email').title = principal.email;
  const switcher = byId<HTMLSelectElement>('org-switch');
  const several = Boolean(orgs && orgs.length > 1);
  if (orgs && several) {
    const options = orgs.map((o) => h('option', { value: o.id, text: `${o.name || o.id} (${o.role})` }));
    if (!principal.org_id) options.unshift(h('option', { value: '', text: 'Choose an organisation…' }));
    switcher.replaceChildren(...options);
    switcher.value = principal.org_id ?? '';
  }
  show(byId('org-switcher'), several && Boolean(principal.org_id));
  show(byId('org-current'), Boolean(principal.org_id) && !several);
  const org = orgs?.find((o) => o.id === principal.org_id);
  byId('identity-org-name').textContent = org?.name || principal.org_id || '';
  byId('identity-role').textContent = principal.org_role ?? 'no role';
}

export const orgName = (ctx: PageContext, orgId: string): string =>
  ctx.session.orgs?.find((o) => o.id === orgId)?.name || 'this organisation';

/** The token from the form; false (with the reason beside the field) when it is not a session token. */
export function readToken(): string | false {
  const input = byId<HTMLInputElement>('signin-token');
  const token = input.value.trim().replace(/^Bearer\s+/i, '');
  const refuse = (message: string) => {
    setFieldError('signin-error', input, message);
    input.focus();
    return false as const;
  };
  if (!token) return refuse('Paste a session token.');
  if (token.startsWith('svc_live_'))
    return refuse(
      'That is an API key. Managing keys needs a session token (a JWT) instead: an API key can never create, list or revoke keys.',
    );
  setFieldError('signin-error', input, '');
  clearAlert(byId('banner'));
  input.value = '';
  return token;
}

/** The organisation ID typed in the picker's form (deployments without GET /orgs). */
export function readOrgId(): string | false {
  const input = byId<HTMLInputElement>('org-id');
  const org = input.value.trim();
  if (UUID_RE.test(org)) return org.toLowerCase();
  setFieldError('org-error', input, 'Enter the organisation ID, a UUID such as 3f2c5e1a-…');
  input.focus();
  return false;
}

export function signedOutBanner(): void {
  const banner = byId('banner');
  banner.replaceChildren(h('span', { text: 'You are signed out. The session token was removed from this tab.' }));
  banner.dataset.status = 'signed-out';
  show(banner, true);
  announce('You are signed out.');
}
