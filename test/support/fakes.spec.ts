import { describe, expect, it } from 'vitest';
import { memberKey } from '../../src/directory/org-directory.js';
import { FakeDirectory } from './fakes.js';

// What the directory answers is checked against the real tables in test/db/org-directory.test.ts;
// here, what the fake adds for unit specs: call recording, injected failures, plan changes.
describe('FakeDirectory', () => {
  it('records every call with its arguments, in order', async () => {
    const directory = new FakeDirectory();
    const org = directory.org('pro');
    await directory.orgPlan(org);
    await directory.userOrgs('u1', null, 2);
    await directory.memberContexts([{ userId: 'u1', orgId: org }]);
    expect(directory.calls.map((c) => c.method)).toEqual(['orgPlan', 'userOrgs', 'memberContexts']);
    expect(directory.callsOf('userOrgs')).toEqual([['u1', null, 2]]);
    expect(directory.callsOf('memberContexts')).toEqual([[[{ userId: 'u1', orgId: org }]]]);
  });

  it('throws the injected error from a method until it recovers, and the call is still recorded', async () => {
    const directory = new FakeDirectory();
    const outage = Object.assign(new Error('Connection terminated unexpectedly'), { code: '57P01' });
    directory.failNext('userOrgs', outage);
    await expect(directory.userOrgs('u1', null, 2)).rejects.toBe(outage);
    await expect(directory.userOrgs('u1', null, 2)).rejects.toBe(outage);
    expect(await directory.orgPlan('nowhere')).toBeNull();
    directory.recover('userOrgs');
    expect(await directory.userOrgs('u1', null, 2)).toEqual([]);
    expect(directory.callsOf('userOrgs')).toHaveLength(3);
  });

  it('creates the org and user a join names, takes a plan change, and forgets a member who leaves', async () => {
    const directory = new FakeDirectory();
    directory.join('u1', 'o1', 'owner', { workspace: true });
    directory.join('u2', 'o1', 'viewer', { plan: 'pro' });
    const contexts = await directory.memberContexts([{ userId: 'u1', orgId: 'o1' }]);
    expect(contexts.get(memberKey('u1', 'o1'))).toEqual({
      userId: 'u1',
      orgId: 'o1',
      email: 'u1@example.com',
      role: 'owner',
      plan: 'pro',
      memberCount: 2,
    });
    expect(await directory.mintStanding('u1', 'o1')).toEqual({ role: 'owner', hasWorkspace: true });
    directory.leave('u1', 'o1');
    expect(await directory.mintStanding('u1', 'o1')).toBeNull();
    expect((await directory.userOrgs('u2', null, 5))[0].memberCount).toBe(1);
  });
});
