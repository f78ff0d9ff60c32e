import { randomUUID } from 'node:crypto';
import type { Plan, Role } from '../../src/common/roles.js';
import {
  memberKey,
  OrgDirectory,
  type DirectoryPage,
  type MemberContext,
  type MintStanding,
  type OrgMemberSummary,
  type UserOrgSummary,
} from '../../src/directory/org-directory.js';

type DirectoryMethod = 'mintStanding' | 'memberContexts' | 'userOrgs' | 'orgPlan' | 'listUserOrgs' | 'listMembers';

interface FakeMembership {
  orgId: string;
  userId: string;
  role: Role;
  createdAt: Date;
}

/** Newest first, ties by id descending, strictly after the page's cursor: the order both directories page in. */
function page<T extends { id: string; createdAt: Date }>(rows: T[], p: DirectoryPage): T[] {
  return rows
    .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || b.id.localeCompare(a.id))
    .filter(
      (r) =>
        !p.after ||
        r.createdAt < p.after.createdAt ||
        (r.createdAt.getTime() === p.after.createdAt.getTime() && r.id < p.after.id),
    )
    .slice(0, p.limit + 1);
}

/**
 * The directory in memory, for unit specs: orgs, users, memberships and workspaces, answering
 * each question of the `OrgDirectory` port as `TypeOrmOrgDirectory` answers it from the tables
 * (test/db/org-directory.test.ts runs the same checks on both). Every call is recorded in
 * `calls`; `failNext(method, error)` makes the next calls of a method throw.
 */
export class FakeDirectory extends OrgDirectory {
  readonly orgs = new Map<string, { name: string; plan: Plan }>();
  readonly users = new Map<string, string>();
  readonly memberships = new Map<string, FakeMembership>();
  readonly workspaces = new Set<string>();
  readonly calls: Array<{ method: DirectoryMethod; args: unknown[] }> = [];
  private readonly failures = new Map<DirectoryMethod, { error: unknown; when: (args: unknown[]) => boolean }>();
  private joined = 0;
  override readonly ownTables: boolean;

  /** `ownTables`: answer as the built-in directory does, whose answers the service may cache. */
  constructor(options: { ownTables?: boolean } = {}) {
    super();
    this.ownTables = options.ownTables ?? false;
  }

  /** A new org (or the given id), with the plan. */
  org(plan: Plan = 'free', id: string = randomUUID(), name = 'Org'): string {
    this.orgs.set(id, { name, plan });
    return id;
  }

  /** A new user (or the given id); the e-mail defaults to `<id>@example.com`. */
  user(id: string = randomUUID(), email = `${id}@example.com`): string {
    this.users.set(id, email);
    return id;
  }

  /**
   * Makes the user a member of the org with the role (creating either if unknown), as of
   * `joinedAt` (default: a moment after the previous join, so the order is stable).
   */
  join(
    userId: string,
    orgId: string,
    role: Role,
    options: { workspace?: boolean; joinedAt?: Date; plan?: Plan } = {},
  ): void {
    if (!this.orgs.has(orgId)) this.org(options.plan ?? 'free', orgId);
    else if (options.plan) this.orgs.get(orgId)!.plan = options.plan;
    if (!this.users.has(userId)) this.user(userId);
    const createdAt = options.joinedAt ?? new Date(Date.UTC(2030, 0, 1) + ++this.joined);
    this.memberships.set(memberKey(userId, orgId), { orgId, userId, role, createdAt });
    if (options.workspace) this.workspaces.add(memberKey(userId, orgId));
  }

  leave(userId: string, orgId: string): void {
    this.memberships.delete(memberKey(userId, orgId));
  }

  /** Connects a repository for the member in the org. */
  workspace(userId: string, orgId: string): void {
    this.workspaces.add(memberKey(userId, orgId));
  }

  /** The next calls of `method` (those whose arguments `when` picks) throw `error`, until `recover(method)`. */
  failNext(method: DirectoryMethod, error: unknown, when: (args: unknown[]) => boolean = () => true): void {
    this.failures.set(method, { error, when });
  }

  recover(method: DirectoryMethod): void {
    this.failures.delete(method);
  }

  /** The recorded calls of one method, their arguments. */
  callsOf(method: DirectoryMethod): unknown[][] {
    return this.calls.filter((c) => c.method === method).map((c) => c.args);
  }

  private called(method: DirectoryMethod, ...args: unknown[]): void {
    this.calls.push({ method, args });
    const failure = this.failures.get(method);
    if (failure?.when(args)) throw failure.error;
  }

  private context(m: FakeMembership): MemberContext {
    const members = [...this.memberships.values()].filter((o) => o.orgId === m.orgId).length;
    return {
      userId: m.userId,
      orgId: m.orgId,
      email: this.users.get(m.userId)!,
      role: m.role,
      plan: this.orgs.get(m.orgId)!.plan,
      memberCount: members,
    };
  }

  async mintStanding(userId: string, orgId: string): Promise<MintStanding | null> {
    this.called('mintStanding', userId, orgId);
    const m = this.memberships.get(memberKey(userId, orgId));
    return m ? { role: m.role, hasWorkspace: this.workspaces.has(memberKey(userId, orgId)) } : null;
  }

  async memberContexts(pairs: ReadonlyArray<{ userId: string; orgId: string }>): Promise<Map<string, MemberContext>> {
    this.called('memberContexts', [...pairs]);
    const out = new Map<string, MemberContext>();
    for (const p of pairs) {
      const m = this.memberships.get(memberKey(p.userId, p.orgId));
      if (m) out.set(memberKey(p.userId, p.orgId), this.context(m));
    }
    return out;
  }

  async userOrgs(userId: string, orgId: string | null, limit: number): Promise<MemberContext[]> {
    this.called('userOrgs', userId, orgId, limit);
    return [...this.memberships.values()]
      .filter((m) => m.userId === userId && (!orgId || m.orgId === orgId))
      .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime())
      .slice(0, limit)
      .map((m) => this.context(m));
  }

  async orgPlan(orgId: string): Promise<Plan | null> {
    this.called('orgPlan', orgId);
    return this.orgs.get(orgId)?.plan ?? null;
  }

  override async listUserOrgs(userId: string, p: DirectoryPage): Promise<UserOrgSummary[]> {
    this.called('listUserOrgs', userId, p);
    const rows = [...this.memberships.values()]
      .filter((m) => m.userId === userId)
      .map((m) => ({
        id: m.orgId,
        name: this.orgs.get(m.orgId)!.name,
        plan: this.orgs.get(m.orgId)!.plan,
        role: m.role,
        createdAt: m.createdAt,
      }));
    return page(rows, p);
  }

  override async listMembers(orgId: string, p: DirectoryPage): Promise<OrgMemberSummary[]> {
    this.called('listMembers', orgId, p);
    const rows = [...this.memberships.values()]
      .filter((m) => m.orgId === orgId)
      .map((m) => ({ id: m.userId, email: this.users.get(m.userId)!, role: m.role, createdAt: m.createdAt }));
    return page(rows, p);
  }
}
