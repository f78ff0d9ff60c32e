import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OrgVersionRepository } from '../../src/versioning/org-version.repository.js';
import { NOWHERE, openRepositoryDatabase, type RepositoryDatabase } from '../support/factories.js';

/** Every statement of OrgVersionRepository (an org's API version pin) on real PostgreSQL, without the app. */
describe('OrgVersionRepository on real PostgreSQL', () => {
  let r: RepositoryDatabase;
  let repo: OrgVersionRepository;

  beforeAll(async () => {
    r = await openRepositoryDatabase();
    repo = new OrgVersionRepository(r.source);
  });
  afterAll(async () => r?.close());

  it('pinOf: a new org is pinned to the contract version 2026-11-01; null for an unknown org', async () => {
    const org = await r.seed.org();
    expect(await repo.pinOf(org)).toBe('2026-11-01');
    expect(await repo.pinOf(NOWHERE)).toBeNull();
  });

  it('setPin: pins the org and returns the previous pin; null for an unknown org', async () => {
    const org = await r.seed.org('pro', 'Acme');
    expect(await repo.setPin(org, '2026-11-26')).toEqual({
      id: org,
      name: 'Acme',
      plan: 'pro',
      api_version: '2026-11-26',
      previous_version: '2026-11-01',
    });
    expect(await repo.pinOf(org)).toBe('2026-11-26');
    expect(await repo.setPin(NOWHERE, '2026-11-26')).toBeNull();
  });

  it('refuses a pin that is not date-shaped (the column check), whatever the caller validated', async () => {
    const org = await r.seed.org();
    await expect(repo.setPin(org, 'latest')).rejects.toThrow(/orgs_api_version_check/);
  });

  it('writes with the manager it is given, so the pin rolls back with its audit event', async () => {
    const org = await r.seed.org();
    await r.source
      .transaction(async (manager) => {
        await repo.setPin(org, '2026-11-26', manager);
        throw new Error('audit failed');
      })
      .catch(() => undefined);
    expect(await repo.pinOf(org)).toBe('2026-11-01');
  });
});
