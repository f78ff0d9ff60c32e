import { Injectable } from '@nestjs/common';
import { signSessionToken } from '../auth/session-token.js';
import type { Plan, Role } from '../common/roles.js';
import { Settings } from '../core/settings.js';
import { DirectoryAdminRepository } from '../directory/directory-admin.repository.js';
import { UsageService } from '../usage/usage.service.js';
import type { Meter } from '../usage/meters.js';

/** A failure the operator can act on; its message goes to stderr as it is. */
export class AdminError extends Error {}

/** The operator commands, on the same repositories and services as the HTTP API. */
@Injectable()
export class DirectoryAdminService {
  constructor(
    private readonly repo: DirectoryAdminRepository,
    private readonly usage: UsageService,
    private readonly settings: Settings,
  ) {}

  async createOrg(name: string, plan: Plan) {
    return (await this.repo.createOrg(name, plan))!;
  }

  async setPlan(orgId: string, plan: Plan) {
    const org = await this.repo.setPlan(orgId, plan);
    if (!org) throw new AdminError(`no org with id ${orgId}`);
    return org;
  }

  async createUser(email: string, id: string | null) {
    const user = await this.repo.createUser(email, id);
    if (!user) throw new AdminError(`a user with e-mail ${email}${id ? ` or id ${id}` : ''} already exists`);
    return user;
  }

  async addMember(orgId: string, userId: string, role: Role) {
    await this.requireOrgAndUser(orgId, userId);
    return (await this.repo.upsertMember(orgId, userId, role))!;
  }

  async removeMember(orgId: string, userId: string) {
    const removed = await this.repo.removeMember(orgId, userId);
    if (!removed) throw new AdminError(`user ${userId} is not a member of org ${orgId}`);
    return { ...removed, removed: true };
  }

  async createWorkspace(orgId: string, userId: string) {
    await this.requireOrgAndUser(orgId, userId);
    // A workspace is what lets a member mint in the org: one for an outsider would mean nothing.
    if (!(await this.repo.isMember(orgId, userId))) {
      throw new AdminError(`user ${userId} is not a member of org ${orgId}: add them first (member add --org ${orgId} --user ${userId} --role <role>)`);
    }
    return (await this.repo.createWorkspace(orgId, userId))!;
  }

  async session(userId: string, orgId: string | null, ttlSeconds: number) {
    const secret = this.settings.sessionSecret;
    if (!secret) throw new AdminError('SESSION_JWT_SECRET is not set: cannot sign a session token');
    const user = await this.repo.findUser(userId);
    if (!user) throw new AdminError(`no user with id ${userId}`);
    if (orgId) {
      if (!(await this.repo.findOrg(orgId))) throw new AdminError(`no org with id ${orgId}`);
      if (!(await this.repo.isMember(orgId, userId))) throw new AdminError(`user ${userId} is not a member of org ${orgId}`);
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

  async recordUsage(orgId: string, meter: Meter, count: number) {
    if (!(await this.repo.findOrg(orgId))) throw new AdminError(`no org with id ${orgId}`);
    const result = await this.usage.charge(orgId, meter, count);
    return { org_id: orgId, meter, count, ...result.counters, resets_at: result.resetsAt.toISOString() };
  }

  private async requireOrgAndUser(orgId: string, userId: string): Promise<void> {
    if (!(await this.repo.findOrg(orgId))) throw new AdminError(`no org with id ${orgId}`);
    if (!(await this.repo.findUser(userId))) throw new AdminError(`no user with id ${userId}`);
  }
}
