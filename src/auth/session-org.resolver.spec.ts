import { NotFoundException } from '@nestjs/common';
import { ScopeRegistry } from '../common/scope-registry.js';
import { describe, expect, it } from 'vitest';
import { cacheOff, heldCache } from '../../test/support/verification-cache.js';
import { FakeDirectory } from '../../test/support/fakes.js';
import type { Principal } from './principal.js';
import { SessionOrgResolver } from './session-org.resolver.js';

const U1 = '00000000-0000-4000-8000-000000000001';
const U2 = '00000000-0000-4000-8000-000000000002';
const U3 = '00000000-0000-4000-8000-000000000003';
const U4 = '00000000-0000-4000-8000-000000000004';
const ORG_A = 'aaaaaaaa-0000-4000-8000-000000000001';
const ORG_B = 'aaaaaaaa-0000-4000-8000-000000000002';

/** The users the resolver asked the directory for the orgs of. */
const userOrgsAsked = (directory: FakeDirectory) => directory.callsOf('userOrgs').map(([userId]) => userId as string);

function session(userId: string, requestedOrgId: string | null = null): Principal {
  return {
    kind: 'session',
    userId,
    email: `${userId}@example.com`,
    orgId: null,
    orgRole: null,
    orgMemberCount: 0,
    plan: null,
    scopes: [],
    requestedOrgId,
  };
}

describe('SessionOrgResolver', () => {
  it('resolves many concurrent sessions each to its own org with one call per distinct question', async () => {
    const directory = new FakeDirectory({ ownTables: true });
    directory.join(U1, ORG_A, 'owner');
    directory.join(U2, ORG_A, 'viewer');
    directory.join(U4, ORG_A, 'member');
    directory.join(U2, ORG_B, 'member');
    directory.join(U3, ORG_B, 'admin');
    const resolver = new SessionOrgResolver(directory, cacheOff(), new ScopeRegistry());

    const onlyOrg = [session(U1), session(U1), session(U1)];
    const severalOrgs = session(U2);
    const named = session(U2, ORG_B);
    const namedOther = session(U3, ORG_B);
    const notMember = session(U3, ORG_A);
    const results = await Promise.allSettled(
      [...onlyOrg, severalOrgs, named, namedOther, notMember].map((p) => resolver.resolve(p)),
    );

    expect(results.slice(0, 6).every((r) => r.status === 'fulfilled')).toBe(true);
    for (const p of onlyOrg)
      expect(p).toMatchObject({
        orgId: ORG_A,
        orgRole: 'owner',
        orgMemberCount: 3,
        scopes: ['decisions:read', 'decisions:write'],
      });
    expect(severalOrgs).toMatchObject({ orgId: null, orgRole: null, scopes: [] });
    expect(named).toMatchObject({ orgId: ORG_B, orgRole: 'member', scopes: ['decisions:read', 'decisions:write'] });
    expect(namedOther).toMatchObject({ orgId: ORG_B, orgRole: 'admin' });
    // eslint-disable-next-line @typescript-eslint/no-unsafe-assignment -- vitest types asymmetric matchers as `any`
    expect(results[6]).toMatchObject({ status: 'rejected', reason: expect.any(NotFoundException) });
    expect(notMember.orgId).toBeNull();

    expect(userOrgsAsked(directory).sort()).toEqual([U1, U2]);
    expect(directory.callsOf('memberContexts')).toHaveLength(1);
    expect(directory.callsOf('memberContexts')[0][0]).toHaveLength(3);
  });

  it('asks again on the next request, so a lowered role or a removal shows at once', async () => {
    const directory = new FakeDirectory({ ownTables: true });
    directory.join(U1, ORG_A, 'owner');
    const resolver = new SessionOrgResolver(directory, cacheOff(), new ScopeRegistry());

    const before = session(U1, ORG_A);
    await resolver.resolve(before);
    expect(before.scopes).toEqual(['decisions:read', 'decisions:write']);

    directory.join(U1, ORG_A, 'viewer');
    const lowered = session(U1, ORG_A);
    await resolver.resolve(lowered);
    expect(lowered).toMatchObject({ orgRole: 'viewer', scopes: ['decisions:read'] });

    directory.leave(U1, ORG_A);
    await expect(resolver.resolve(session(U1, ORG_A))).rejects.toBeInstanceOf(NotFoundException);
    const unnamed = session(U1);
    await resolver.resolve(unnamed);
    expect(unnamed.orgId).toBeNull();
  });

  it('fails only the requests whose directory call failed', async () => {
    const directory = new FakeDirectory({ ownTables: true });
    directory.join(U1, ORG_A, 'owner');
    directory.join(U2, ORG_A, 'member');
    directory.join(U3, ORG_B, 'member');
    directory.failNext(
      'userOrgs',
      Object.assign(new Error('Connection terminated unexpectedly'), { code: '57P01' }),
      (args) => args[0] === U2,
    );
    directory.failNext('memberContexts', Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
    const resolver = new SessionOrgResolver(directory, cacheOff(), new ScopeRegistry());

    const ok = session(U1);
    const [r1, r2, r3] = await Promise.allSettled([
      resolver.resolve(ok),
      resolver.resolve(session(U2)),
      resolver.resolve(session(U3, ORG_B)),
    ]);

    expect(r1.status).toBe('fulfilled');
    expect(ok.orgId).toBe(ORG_A);
    expect(r2).toMatchObject({ status: 'rejected', reason: { code: '57P01' } });
    expect(r3).toMatchObject({ status: 'rejected', reason: { code: 'ECONNREFUSED' } });

    // The next batch is unaffected by the last one's failures.
    directory.recover('userOrgs');
    directory.recover('memberContexts');
    const again = session(U3, ORG_B);
    await resolver.resolve(again);
    expect(again.orgId).toBe(ORG_B);
  });

  it('does the same directory read for an existing org the user is not in as for a random id, every time', async () => {
    const directory = new FakeDirectory({ ownTables: true });
    directory.join(U1, ORG_A, 'owner');
    directory.join(U2, ORG_B, 'owner'); // ORG_B exists; U1 is not in it
    const resolver = new SessionOrgResolver(directory, heldCache().cache, new ScopeRegistry());
    const reads = async (orgId: string) => {
      const before = directory.callsOf('memberContexts').length;
      await expect(resolver.resolve(session(U1, orgId))).rejects.toBeInstanceOf(NotFoundException);
      return directory.callsOf('memberContexts').length - before;
    };
    const randomId = () => `bbbbbbbb-0000-4000-8000-${String(Math.floor(Math.random() * 1e12)).padStart(12, '0')}`;
    expect([
      await reads(ORG_B),
      await reads(ORG_B),
      await reads(randomId()),
      await reads(randomId()),
      await reads(ORG_B),
    ]).toEqual([1, 1, 1, 1, 1]);

    // A membership is an answer worth keeping: the second request reads nothing.
    const member = session(U1, ORG_A);
    await resolver.resolve(member);
    const before = directory.callsOf('memberContexts').length;
    const again = session(U1, ORG_A);
    expect(resolver.resolve(again)).toBeUndefined();
    expect(again.orgId).toBe(ORG_A);
    expect(directory.callsOf('memberContexts')).toHaveLength(before);
  });
});
