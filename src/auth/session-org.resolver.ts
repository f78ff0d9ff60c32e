import { Injectable, NotFoundException, UnauthorizedException } from '@nestjs/common';
import { endOfTurnLoader } from '../common/end-of-turn-loader.js';
import { ScopeRegistry } from '../common/scope-registry.js';
import { memberKey, OrgDirectory, type MemberContext } from '../directory/org-directory.js';
import type { Principal } from './principal.js';
import { VerificationCache } from './verification-cache.js';
import { ERRORS } from '../common/error-messages.js';

type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };
/** Runs a directory call and settles it, a synchronous throw included (a host's directory may throw). */
async function settle<T>(call: () => Promise<T>): Promise<Settled<T>> {
  try {
    return { ok: true, value: await call() };
  } catch (error) {
    return { ok: false, error };
  }
}

/** A service account never signs in: a session naming one is refused like an invalid credential. */
function refuseServiceAccount(orgs: MemberContext[]): void {
  if (orgs.some((o) => o.service)) throw new UnauthorizedException(ERRORS.credentialInvalid);
}

interface Lookup {
  userId: string;
  requested: string | null;
}

/**
 * The org a session operates in: the `org_id` claim, else `X-Org-Id`, else the user's only org.
 * A named org the user is not in looks exactly like a missing one (404).
 *
 * Like key verification, answers come from the verification cache under the instance's lease
 * (built-in directory only), else lookups that arrive in the same event-loop turn share the
 * directory's statements: every named (user, org) pair in one `memberContexts` call, and one
 * `userOrgs` call per distinct user. A role change or a removal is applied on every leased
 * instance before the change's request answers; a failed call fails only the requests that
 * depended on it.
 *
 * "Not a member of that org" is never cached, so an existing org the user is not in costs the
 * same directory read as a random id: the answer's time does not tell which orgs exist.
 */
@Injectable()
export class SessionOrgResolver {
  /**
   * Per-turn batching, no cache: a lookup that arrives while a batch is in flight goes into the
   * next one. Each answer is settled so that a failed directory call rejects only the lookups
   * that depended on it, with its own error.
   */
  private readonly loader = endOfTurnLoader<Lookup, Settled<MemberContext[]>>((batch) => this.runBatch(batch));

  private readonly cached: boolean;

  constructor(
    private readonly directory: OrgDirectory,
    private readonly cache: VerificationCache,
    private readonly scopes: ScopeRegistry,
  ) {
    this.cached = directory.ownTables && cache.enabled;
  }

  /** Synchronous (no promise) when the cache answers: the guard then costs a cached session no promise hop. */
  resolve(principal: Principal): void | Promise<void> {
    const requested = principal.requestedOrgId ?? null;
    const hit = this.cached ? this.cache.session(principal.userId, requested) : undefined;
    if (hit) return this.apply(principal, requested, hit);
    return this.lookup(principal.userId, requested).then((orgs) => this.apply(principal, requested, orgs));
  }

  /**
   * For routes that resolve no org (session only): refuses a service account's session (401) from
   * the same cached lookup as the user's orgs. Only the built-in directory has service accounts.
   */
  requirePerson(principal: Principal): void | Promise<void> {
    if (!this.directory.ownTables) return;
    const hit = this.cached ? this.cache.session(principal.userId, null) : undefined;
    if (hit) return refuseServiceAccount(hit);
    return this.lookup(principal.userId, null).then(refuseServiceAccount);
  }

  private apply(principal: Principal, requested: string | null, orgs: MemberContext[]): void {
    refuseServiceAccount(orgs);
    if (requested && orgs.length === 0) throw new NotFoundException(ERRORS.orgNotFound);
    if (orgs.length !== 1) return;
    const [org] = orgs;
    principal.orgId = org.orgId;
    principal.orgRole = org.role;
    principal.orgMemberCount = org.memberCount;
    principal.plan = org.plan;
    principal.scopes = this.scopes.ceiling(org.role);
  }

  /** The user's standing in the named org (zero or one entry), or up to two of the user's orgs, from the database. */
  private async lookup(userId: string, requested: string | null): Promise<MemberContext[]> {
    if (!this.cached) return this.load(userId, requested);
    const stamp = this.cache.stamp();
    const orgs = await this.load(userId, requested);
    if (!requested || orgs.length > 0) this.cache.putSession(userId, requested, orgs, stamp);
    return orgs;
  }

  private async load(userId: string, requested: string | null): Promise<MemberContext[]> {
    const answer = await this.loader.load({ userId, requested });
    if (!answer.ok) throw answer.error;
    return answer.value;
  }

  private async runBatch(batch: readonly Lookup[]): Promise<Array<Settled<MemberContext[]>>> {
    const pairs = new Map<string, { userId: string; orgId: string }>();
    const users = new Map<string, Promise<Settled<MemberContext[]>>>();
    for (const p of batch) {
      if (p.requested) pairs.set(memberKey(p.userId, p.requested), { userId: p.userId, orgId: p.requested });
      else if (!users.has(p.userId))
        users.set(
          p.userId,
          settle(() => this.directory.userOrgs(p.userId, null, 2)),
        );
    }
    // Every call is settled on its own, so a failure reaches only the requests that depended on it.
    const named = await settle(async () =>
      pairs.size > 0 ? this.directory.memberContexts([...pairs.values()]) : new Map<string, MemberContext>(),
    );
    const perUser = new Map<string, Settled<MemberContext[]>>();
    for (const [userId, result] of users) perUser.set(userId, await result);

    return batch.map((p): Settled<MemberContext[]> => {
      if (!p.requested) return perUser.get(p.userId)!;
      if (!named.ok) return named;
      const ctx = named.value.get(memberKey(p.userId, p.requested));
      return { ok: true, value: ctx ? [ctx] : [] };
    });
  }
}
