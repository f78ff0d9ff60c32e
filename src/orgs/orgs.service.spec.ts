import { HttpException } from '@nestjs/common';
import { describe, expect, it } from 'vitest';
import type { Principal } from '../auth/principal.js';
import { testSession } from '../../test/support/principal.js';
import { OrgDirectory, type MemberContext } from '../directory/org-directory.js';
import { OrgsService } from './orgs.service.js';

const USER = '5a0f6a8e-1b7c-4d2e-9f3a-0c1d2e3f4a5b';
const ORG = '7c1e2d3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f';

/** A host's directory written before the list methods existed: it overrides only the abstract ones. */
class OlderHostDirectory extends OrgDirectory {
  async mintStanding() {
    return null;
  }
  async memberContexts() {
    return new Map<string, MemberContext>();
  }
  async userOrgs(userId: string, orgId: string | null): Promise<MemberContext[]> {
    return [{ userId, orgId: orgId ?? ORG, email: 'a@example.com', role: 'owner', plan: 'free', memberCount: 1 }];
  }
  async orgPlan() {
    return null;
  }
}

const session: Principal = testSession({ userId: USER, email: 'a@example.com' });

describe('OrgsService with a host directory that cannot list', () => {
  const sut = new OrgsService(new OlderHostDirectory());

  it.each([
    ['GET /orgs', () => sut.listMine(session, {})],
    ['GET /orgs/{org_id}/members', () => sut.members(session, ORG, {})],
  ])('%s answers 501 rather than fail with a 500', async (_, call) => {
    const error = await call().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HttpException);
    expect((error as HttpException).getStatus()).toBe(501);
  });
});
