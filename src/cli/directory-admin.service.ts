import { Injectable } from '@nestjs/common';
import { EventOutbox } from '../events/event-outbox.js';
import type { EntityManager } from 'typeorm';
import { AuditService, OPERATOR, type AuditEntry, type AuditEventRecord } from '../audit/audit.service.js';
import { Transactions } from '../database/transactions.js';
import { signSessionToken } from '../auth/session-token.js';
import { afterCommit } from '../coherence/change-tail.js';
import { VerificationInvalidation } from '../coherence/verification-invalidation.js';
import type { Plan, Role } from '../common/roles.js';
import { Settings } from '../settings/settings.js';
import { DirectoryAdminRepository } from '../directory/directory-admin.repository.js';
import { UsageService } from '../usage/usage.service.js';
import { OrgVersionRepository } from '../versioning/org-version.repository.js';
import { SERVICE_ACCOUNT_DOMAIN } from '../service-keys/service-account.repository.js';

/** A failure the operator can act on; its message goes to stderr as it is. */
export class AdminError extends Error {}

/**
 * The operator commands, on the same repositories and services as the HTTP API. Every change
 * in an org is recorded in the audit log with the operator CLI as actor, in the change's own
 * transaction. (`user create` happens in no org and is not recorded; docs/cli.md, "Audit".)
 */
@Injectable()
export class DirectoryAdminService {
  constructor(
    private readonly repo: DirectoryAdminRepository,
    private readonly usage: UsageService,
    private readonly settings: Settings,
    private readonly transactions: Transactions,
    private readonly audit: AuditService,
    private readonly invalidation: VerificationInvalidation,
    private readonly outbox: EventOutbox,
    private readonly versions: OrgVersionRepository,
  ) {}

  private record(manager: EntityManager, entry: Omit<AuditEntry, 'actor' | 'credential'>): Promise<void> {
    return this.audit.record(manager, { ...OPERATOR, ...entry });
  }

  async createOrg(name: string, plan: Plan) {
    return this.transactions.run(async (m) => {
      const org = (await this.repo.createOrg(name, plan, m))!;
      await this.record(m, {
        orgId: org.id,
        action: 'org.created',
        target: { type: 'org', id: org.id },
        details: { name, plan },
      });
      return org;
    });
  }

  async setPlan(orgId: string, plan: Plan) {
    const result = await this.transactions.run(async (m) => {
      const org = await this.repo.setPlan(orgId, plan, m);
      if (!org) throw new AdminError(`no org with id ${orgId}`);
      const { previous_plan: previous, ...result } = org;
      if (previous !== plan) {
        await this.record(m, {
          orgId,
          action: 'org.plan_changed',
          target: { type: 'org', id: orgId },
          details: { from: previous, to: plan },
        });
      }
      return result;
    });
    await afterCommit(this.outbox, this.invalidation, { wroteEvents: false, narrows: true });
    return result;
  }

  /** Pins the org's API version; every serving instance applies it before this returns. */
  async setApiVersion(orgId: string, version: string) {
    const result = await this.transactions.run(async (m) => {
      const org = await this.versions.setPin(orgId, version, m);
      if (!org) throw new AdminError(`no org with id ${orgId}`);
      const { previous_version: previous, ...result } = org;
      if (previous !== version) {
        await this.record(m, {
          orgId,
          action: 'org.api_version_changed',
          target: { type: 'org', id: orgId },
          details: { from: previous, to: version },
        });
      }
      return result;
    });
    await afterCommit(this.outbox, this.invalidation, { wroteEvents: false, narrows: true });
    return result;
  }

  async createUser(email: string, id: string | null) {
    // Service accounts' addresses: a person holding one would keep that org from holding service keys.
    if (email.toLowerCase().endsWith(`@${SERVICE_ACCOUNT_DOMAIN}`))
      throw new AdminError(`e-mail addresses @${SERVICE_ACCOUNT_DOMAIN} are reserved for service accounts`);
    const user = await this.repo.createUser(email, id);
    if (!user) throw new AdminError(`a user with e-mail ${email}${id ? ` or id ${id}` : ''} already exists`);
    return user;
  }

  async addMember(orgId: string, userId: string, role: Role) {
    await this.requireOrgAndUser(orgId, userId);
    const member = await this.transactions.run(async (m) => {
      const { previous_role: previous, ...member } = (await this.repo.upsertMember(orgId, userId, role, m))!;
      const target = { type: 'user', id: userId };
      if (previous === null) await this.record(m, { orgId, action: 'member.added', target, details: { role } });
      else if (previous !== role)
        await this.record(m, { orgId, action: 'member.role_changed', target, details: { from: previous, to: role } });
      return member;
    });
    // A role change (and the org's member count) is applied by every serving instance first.
    await afterCommit(this.outbox, this.invalidation, { wroteEvents: false, narrows: true });
    return member;
  }

  async removeMember(orgId: string, userId: string) {
    const removed = await this.transactions.run(async (m) => {
      const removed = await this.repo.removeMember(orgId, userId, m);
      if (!removed) throw new AdminError(`user ${userId} is not a member of org ${orgId}`);
      await this.record(m, {
        orgId,
        action: 'member.removed',
        target: { type: 'user', id: userId },
        details: { role: removed.role },
      });
      const at = this.settings.clock.now();
      await this.outbox.write(m, {
        orgId,
        type: 'member.removed',
        data: { org_id: orgId, user_id: userId, role: removed.role, removed_at: at.toISOString() },
        at,
      });
      return { ...removed, removed: true };
    });
    await afterCommit(this.outbox, this.invalidation, { wroteEvents: true, narrows: true });
    return removed;
  }

  async createWorkspace(orgId: string, userId: string) {
    await this.requireOrgAndUser(orgId, userId);
    // A workspace is what lets a member mint in the org: one for an outsider would mean nothing.
    if (!(await this.repo.isMember(orgId, userId))) {
      throw new AdminError(
        `user ${userId} is not a member of org ${orgId}: add them first (member add --org ${orgId} --user ${userId} --role <role>)`,
      );
    }
    return this.transactions.run(async (m) => {
      const { created, ...workspace } = (await this.repo.createWorkspace(orgId, userId, m))!;
      if (created) {
        await this.record(m, {
          orgId,
          action: 'workspace.created',
          target: { type: 'workspace', id: workspace.id },
          details: { user_id: userId },
        });
      }
      return workspace;
    });
  }

  async session(userId: string, orgId: string | null, ttlSeconds: number) {
    const secret = this.settings.sessionSecret;
    if (!secret) throw new AdminError('SESSION_JWT_SECRET is not set: cannot sign a session token');
    const user = await this.repo.findUser(userId);
    if (!user) throw new AdminError(`no user with id ${userId}`);
    if (orgId) {
      if (!(await this.repo.findOrg(orgId))) throw new AdminError(`no org with id ${orgId}`);
      if (!(await this.repo.isMember(orgId, userId)))
        throw new AdminError(`user ${userId} is not a member of org ${orgId}`);
    }
    // A token that acts in an org is an operator action in that org; one with no org is in none.
    if (orgId) {
      await this.transactions.run((m) =>
        this.record(m, {
          orgId,
          action: 'session.issued',
          target: { type: 'user', id: userId },
          details: { ttl_seconds: ttlSeconds },
        }),
      );
    }
    const token = signSessionToken(secret, {
      userId: user.id,
      email: user.email,
      orgId,
      ttlSeconds,
      issuer: this.settings.issuer,
      audience: this.settings.audience,
    });
    return { token };
  }

  async recordUsage(orgId: string, meter: string, count: number) {
    if (!(await this.repo.findOrg(orgId))) throw new AdminError(`no org with id ${orgId}`);
    // Written before the answer on either charging path (a leased charge is waited for), with the counts after it.
    const result = await this.usage.settled(await this.usage.charge(orgId, meter, count));
    await this.transactions.run((m) =>
      this.record(m, {
        orgId,
        action: 'usage.recorded',
        target: { type: 'org', id: orgId },
        details: { meter, count },
      }),
    );
    return {
      org_id: orgId,
      meter,
      count,
      used: result.used,
      ...result.counters,
      resets_at: result.resetsAt.toISOString(),
    };
  }

  /**
   * `audit export`: the org's events, oldest first, one JSON object per line, written batch by
   * batch as they are read (keyset batches: the log is never held in memory whole).
   */
  async exportAudit(
    orgId: string,
    since: Date | undefined,
    until: Date | undefined,
    write: (chunk: string) => Promise<void>,
  ): Promise<number> {
    if (!(await this.repo.findOrg(orgId))) throw new AdminError(`no org with id ${orgId}`);
    let count = 0;
    for await (const batch of this.audit.exportEvents(orgId, since, until)) {
      await write(batch.map((e: AuditEventRecord) => `${JSON.stringify(e)}\n`).join(''));
      count += batch.length;
    }
    return count;
  }

  private async requireOrgAndUser(orgId: string, userId: string): Promise<void> {
    if (!(await this.repo.findOrg(orgId))) throw new AdminError(`no org with id ${orgId}`);
    if (!(await this.repo.findUser(userId))) throw new AdminError(`no user with id ${userId}`);
  }
}
