import type { Plan, Role } from '../common/roles.js';

/** A user's standing in one org, as verification and /me need it. */
export interface MemberContext {
  userId: string;
  orgId: string;
  email: string;
  role: Role;
  plan: Plan;
  memberCount: number;
}

/** What minting needs to know about the caller in the target org. */
export interface MintStanding {
  role: Role;
  hasWorkspace: boolean;
}

export const memberKey = (userId: string, orgId: string) => `${userId}:${orgId}`;

/**
 * The port through which this module reads orgs, users, memberships and workspaces.
 * The default implementation reads this module's own tables; a host that keeps those facts
 * elsewhere provides its own implementation (see README, "Embedding").
 */
export abstract class OrgDirectory {
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
}
