import { ForbiddenException } from '@nestjs/common';
import { beforeEach, describe, expect, it } from 'vitest';
import { TestClock } from '../../test/support/clock.js';
import { FakeDirectory } from '../../test/support/fakes.js';
import { keyChangesOverFakes, noKeyPolicy, type FakeKeys, type Written } from '../../test/support/key-store-fakes.js';
import { testSession } from '../../test/support/principal.js';
import { Settings } from '../settings/settings.js';
import type { ApiKeyRepository } from './api-key.repository.js';
import { ApiKeysService } from './api-keys.service.js';
import type { UpdateApiKeyDto } from './dto/update-api-key.dto.js';
import { KeyMinting } from './key-minting.js';
import { KeySettingsService } from './key-settings.service.js';

const OWNER = '5a0f6a8e-1b7c-4d2e-9f3a-0c1d2e3f4a5b';
const ADMIN = '6b1f7a9e-2c8d-4e3f-8a4b-1d2e3f4a5b6c';
const ORG = '7c1e2d3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f';
const monthly = { amount: 1000, interval: 'monthly' as const };

/** Per control: what an admin sets, what its owner may then send (narrower or the same), and what lifts it. */
const CONTROLS: Array<[string, UpdateApiKeyDto, UpdateApiKeyDto[], UpdateApiKeyDto[]]> = [
  ['enabled', { enabled: false }, [{ enabled: false }], [{ enabled: true }]],
  [
    'rate_limits',
    { rate_limits: [{ name: 'default', limit: 100, window_seconds: 1 }] },
    [
      { rate_limits: [{ name: 'default', limit: 25, window_seconds: 1 }] },
      {
        rate_limits: [
          { name: 'default', limit: 100, window_seconds: 1 },
          { name: 'hourly', limit: 1000, window_seconds: 3600 },
        ],
      },
    ],
    [
      { rate_limits: [{ name: 'default', limit: 101, window_seconds: 1 }] },
      { rate_limits: [{ name: 'default', limit: 100, window_seconds: 2 }] },
      { rate_limits: [] },
      { rate_limits: null },
    ],
  ],
  [
    'credits',
    { credits: { remaining: 40, refill: monthly } },
    [{ credits: { remaining: 10, refill: { ...monthly, amount: 500 } } }, { credits: { remaining: 40 } }],
    [
      { credits: { remaining: 41, refill: monthly } },
      { credits: { remaining: 10, refill: { ...monthly, amount: 1001 } } },
      { credits: { remaining: 10, refill: { amount: 1000, interval: 'daily' } } },
      { credits: null },
    ],
  ],
  [
    'allowed_cidrs',
    { allowed_cidrs: ['10.0.0.0/8'] },
    [{ allowed_cidrs: ['10.1.0.0/16', '10.2.0.0/16'] }, { allowed_cidrs: [] }],
    [{ allowed_cidrs: ['10.0.0.0/7'] }, { allowed_cidrs: ['10.1.0.0/16', '192.0.2.0/24'] }, { allowed_cidrs: null }],
  ],
  [
    'metadata',
    { metadata: { tier: 'gold' } },
    [{ metadata: { tier: 'gold' } }],
    [{ metadata: { tier: 'platinum' } }, { metadata: { tier: 'gold', beta: true } }, { metadata: null }],
  ],
];

describe('KeySettingsService: a control an org admin set', () => {
  let keys: FakeKeys;
  let written: Written;
  let sut: KeySettingsService;
  let keyId: string;
  const owner = testSession({ userId: OWNER });
  const admin = testSession({ userId: ADMIN });

  beforeEach(async () => {
    const directory = new FakeDirectory();
    directory.join(OWNER, ORG, 'member', { workspace: true });
    directory.join(ADMIN, ORG, 'admin');
    const settings = new Settings({
      apiKeySecret: 'unit-test-api-key-secret-0123456789abcdef',
      session: { secret: 'unit-test-session-secret-0123456789abcdef' },
      clock: new TestClock('2030-01-02T03:04:05.678Z'),
    });
    const fixture = keyChangesOverFakes();
    ({ keys, written } = fixture);
    const repository = keys as never as ApiKeyRepository;
    const minting = new KeyMinting(repository, fixture.changes, settings, noKeyPolicy);
    const apiKeys = new ApiKeysService(repository, fixture.changes, directory, settings, minting);
    keyId = (await apiKeys.mint(owner, { org_id: ORG, name: 'ci', metadata: { team: 'a' } })).id;
    sut = new KeySettingsService(fixture.changes, directory, settings);
  });

  const refusal = (work: Promise<unknown>) =>
    work.then(
      () => null,
      (e: unknown) => e,
    );

  it('records the owner for the controls set at mint and by the owner, and an admin for an admin’s', async () => {
    expect(keys.rows[0].controlsSetBy).toEqual({ metadata: 'owner' });
    const byOwner = await sut.update(owner, keyId, { rate_limits: [{ name: 'default', limit: 5, window_seconds: 1 }] });
    expect(byOwner.controls_set_by).toEqual({ metadata: 'owner', rate_limits: 'owner' });
    const byAdmin = await sut.updateInOrg(admin, ORG, keyId, { enabled: false, metadata: { team: 'b' } });
    expect(byAdmin.controls_set_by).toEqual({ metadata: 'admin', rate_limits: 'owner', enabled: 'admin' });
    expect((await sut.updateAsOperator(keyId, { rate_limits: [] })).controls_set_by).toMatchObject({
      rate_limits: 'admin',
    });
  });

  it('lets the owner lift or clear a control they set themselves', async () => {
    await sut.update(owner, keyId, { rate_limits: [{ name: 'default', limit: 5, window_seconds: 1 }], enabled: false });
    const lifted = await sut.update(owner, keyId, { rate_limits: null, enabled: true, metadata: null });
    expect(lifted).not.toHaveProperty('rate_limits');
    expect(lifted).not.toHaveProperty('enabled');
    expect(lifted).not.toHaveProperty('controls_set_by');
    expect(keys.rows[0].controlsSetBy).toBeNull();
  });

  describe.each(CONTROLS)('%s', (control, set, narrower, lifts) => {
    beforeEach(async () => {
      await sut.updateInOrg(admin, ORG, keyId, set);
    });

    it.each(lifts)('refuses the owner lifting it with %j: 403 naming it, nothing written', async (lift) => {
      const before = JSON.stringify(keys.rows[0]);
      const audited = written.audit.length;
      const error = await refusal(sut.update(owner, keyId, { name: 'renamed', ...lift }));
      expect(error).toBeInstanceOf(ForbiddenException);
      expect((error as Error).message).toMatch(new RegExp(`^${control} was set by an org admin, so this key's owner`));
      expect(JSON.stringify(keys.rows[0])).toBe(before);
      expect(written.audit).toHaveLength(audited);
    });

    it.each(narrower)('lets the owner narrow it with %j, and it stays the admin’s', async (narrow) => {
      const record = await sut.update(owner, keyId, narrow);
      expect(record.controls_set_by?.[control as 'enabled']).toBe('admin');
    });

    it.each(lifts)('lets an admin lift it with %j', async (lift) => {
      const record = await sut.updateInOrg(admin, ORG, keyId, lift);
      expect(record.controls_set_by?.[control as 'enabled']).toBe(
        record[control as 'enabled'] === undefined ? undefined : 'admin',
      );
    });
  });

  it('lets the owner re-enable a key they disabled, and not one an admin disabled until an admin re-enables it', async () => {
    await sut.update(owner, keyId, { enabled: false });
    expect((await sut.update(owner, keyId, { enabled: true })).state).toBe('active');
    await sut.updateInOrg(admin, ORG, keyId, { enabled: false });
    expect(await refusal(sut.update(owner, keyId, { enabled: true }))).toBeInstanceOf(ForbiddenException);
    expect((await sut.updateInOrg(admin, ORG, keyId, { enabled: true })).state).toBe('active');
    await sut.update(owner, keyId, { enabled: false });
    expect((await sut.update(owner, keyId, { enabled: true })).state).toBe('active');
  });

  it('keeps an owner’s narrowing of an admin’s control one-way: raising it back takes an admin', async () => {
    await sut.updateInOrg(admin, ORG, keyId, { rate_limits: [{ name: 'default', limit: 100, window_seconds: 1 }] });
    await sut.update(owner, keyId, { rate_limits: [{ name: 'default', limit: 50, window_seconds: 1 }] });
    const error = await refusal(
      sut.update(owner, keyId, { rate_limits: [{ name: 'default', limit: 100, window_seconds: 1 }] }),
    );
    expect((error as Error).message).toMatch(/rate_limits\[0\]\.limit may be at most 50/);
  });
});
