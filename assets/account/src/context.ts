// What the panels share: the API client, the deployment's document, who is signed in, and a way
// to ask the other panels to reload after a change. Each panel keeps its own state (its list,
// its cursor) in its own module; this is the only state they share, reset on sign-out.
import type { Org, Principal, ScopeDescription } from '../../../packages/client/src/types.js';
import type { Api } from './api.js';
import { ApiDocument } from './api-document.js';
import type { KeysPanel } from './keys/keys-panel.js';
import type { Sections } from './sections.js';

export interface Session {
  token: string | null;
  /** The org sent as X-Org-Id: from the URL (?org=), so that a link opens the same view. */
  orgId: string | null;
  me: Principal | null;
  /** The caller's orgs from GET /orgs; null when the deployment has no such route. */
  orgs: Org[] | null;
  /** user id → e-mail of the org's members (owners and admins only). */
  members: Map<string, string>;
  /** The deployment's scopes as the forms offer them (keys/scopes.ts), for the chosen org. */
  scopes: ScopeDescription[];
}

/** Reloaders the panels call after a change that shows elsewhere (each absent until registered). */
export interface Panels {
  keys?: KeysPanel;
  orgKeys?: { load(): Promise<boolean> };
  serviceKeys?: { load(): Promise<boolean> };
  audit?: { load(): Promise<boolean> };
  approvals?: { load(): Promise<boolean> };
}

export interface PageContext {
  api: Api;
  doc: ApiDocument;
  session: Session;
  panels: Panels;
  sections: Sections;
}

export const newSession = (token: string | null = null): Session => ({
  token,
  orgId: null,
  me: null,
  orgs: null,
  members: new Map(),
  scopes: [],
});

/** The signed-in principal with an org (the app view only runs with one). */
export function me(ctx: PageContext): Principal & { org_id: string } {
  const principal = ctx.session.me;
  if (!principal?.org_id) throw new Error('no organisation chosen');
  return principal as Principal & { org_id: string };
}

/** Owners and admins see the organisation's sections (each still hides where its route is missing or refused). */
export const isManager = (ctx: PageContext): boolean =>
  ctx.session.me?.org_role === 'owner' || ctx.session.me?.org_role === 'admin';

/** The org panels (every key, the audit log) show each change at once, not after a reload. */
export async function refreshOrgPanels(ctx: PageContext): Promise<void> {
  if (!isManager(ctx)) return;
  await Promise.all([ctx.panels.orgKeys?.load(), ctx.panels.audit?.load()]);
}

export const planName = (plan: string): string => `${plan === 'pro' ? 'Pro' : plan === 'free' ? 'Free' : plan} plan`;

/** "you", a member's e-mail, or the id. */
export function personName(ctx: PageContext, userId: string | undefined | null, otherwise = ''): string {
  if (!userId) return otherwise;
  if (userId === ctx.session.me?.user_id) return 'you';
  return ctx.session.members.get(userId) ?? otherwise ?? userId;
}
