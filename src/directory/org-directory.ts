import type { Plan, Role } from '../common/roles.js';

/** A user's standing in one org, as verification and /me need it. */
export interface MemberContext {
  userId: string;
  orgId: string;
  email: string;
  role: Role;
  plan: Plan;
  /** The org's people (service accounts are not counted). */
  memberCount: number;
  /** Set when the user is a service account (built-in directory only): it holds service keys and never signs in. */
  service?: true;
}

/** What minting needs to know about the caller in the target org. */
export interface MintStanding {
  role: Role;
  hasWorkspace: boolean;
}

/** One of a user's orgs, as `GET /orgs` lists it; `createdAt` is when the user joined it. */
export interface UserOrgSummary {
  id: string;
  name: string;
  plan: Plan;
  role: Role;
  createdAt: Date;
}

/** One member of an org, as `GET /orgs/{org_id}/members` lists it; `id` is the user id, `createdAt` when they joined. */
export interface OrgMemberSummary {
  id: string;
  email: string;
  role: Role;
  createdAt: Date;
}

/** A keyset page request: rows strictly after `after` in (createdAt DESC, id DESC) order, `limit + 1` of them. */
export interface DirectoryPage {
  after: { createdAt: Date; id: string } | null;
  limit: number;
}

/** Thrown by a directory that cannot list (a host's own directory that does not override the list methods). */
export class DirectoryListingUnsupportedError extends Error {}

export const memberKey = (userId: string, orgId: string) => `${userId}:${orgId}`;

/**
 * The port through which this module reads orgs, users, memberships and workspaces.
 * The default implementation reads this module's own tables; a host that keeps those facts
 * elsewhere provides its own implementation (docs/embedding.md, "Your own orgs and users").
 */
export abstract class OrgDirectory {
  /**
   * True when this directory reads this module's own tables, in the database the keys live in:
   * key verification then reads a key and its owner's standing in one statement, and the
   * verification cache may keep answers (the tables' triggers notify every change). A host's
   * directory keeps facts where no trigger of ours sees them, so it stays false.
   */
  readonly ownTables: boolean = false;

  /** The caller's role and workspace in an org; null when the org does not exist or the user is not in it. */
  abstract mintStanding(userId: string, orgId: string): Promise<MintStanding | null>;

  /** Contexts for (user, org) pairs, keyed by `memberKey`; a pair whose user is not a member is absent. */
  abstract memberContexts(pairs: ReadonlyArray<{ userId: string; orgId: string }>): Promise<Map<string, MemberContext>>;

  /**
   * The orgs a user belongs to, restricted to `orgId` when given; at most `limit` rows.
   * Session org resolution needs no more than two to tell "the only org" from "several".
   */
  abstract userOrgs(userId: string, orgId: string | null, limit: number): Promise<MemberContext[]>;

  /** The org's plan, or null when the org does not exist. */
  abstract orgPlan(orgId: string): Promise<Plan | null>;

  /**
   * The user's orgs with names, newest membership first (`GET /orgs`). Not abstract, so a
   * host's directory written before it still compiles; override it to serve that route.
   */
  listUserOrgs(_userId: string, _page: DirectoryPage): Promise<UserOrgSummary[]> {
    return Promise.reject(new DirectoryListingUnsupportedError('this OrgDirectory does not list a user’s orgs'));
  }

  /** The org's members with e-mails, newest first (`GET /orgs/{org_id}/members`); override as above. */
  listMembers(_orgId: string, _page: DirectoryPage): Promise<OrgMemberSummary[]> {
    return Promise.reject(new DirectoryListingUnsupportedError('this OrgDirectory does not list an org’s members'));
  }
}
