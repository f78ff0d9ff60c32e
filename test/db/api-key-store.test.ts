import { randomBytes, randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ApiKeyWriteRepository,
  type MintWrite,
  type NewApiKey,
  type RevokeWrite,
} from '../../src/api-keys/api-key-write.repository.js';
import { ApiKeyRepository } from '../../src/api-keys/api-key.repository.js';
import { ApiKeyVerificationStore } from '../../src/api-keys/api-key-verification.store.js';
import type { AuditTemplate, NewAuditRow } from '../../src/audit/audit.repository.js';
import { generateApiKey } from '../../src/auth/api-key-format.js';
import { TestClock } from '../support/clock.js';
import { createSeededDatabase, type TestDatabase } from '../support/database.js';
import type { Seeder } from '../support/seed.js';

/**
 * Every statement of the key store on real PostgreSQL, without the app: the repositories are
 * built on a DataSource of their own over a database cloned from the migrated template.
 */
const NOW = new Date('2031-06-01T12:00:00.000Z');
const HOUR = 3_600_000;
const at = (offsetMs: number) => new Date(NOW.getTime() + offsetMs);

describe('the key store', () => {
  let db: TestDatabase;
  let seed: Seeder;
  let ds: DataSource;
  let keys: ApiKeyRepository;
  let mints: ApiKeyWriteRepository; // the one-statement writes: mint under the cap, revoke with events
  let verification: ApiKeyVerificationStore;
  const clock = new TestClock(NOW);

  beforeAll(async () => {
    ({ db, seed } = await createSeededDatabase());
    ds = await new DataSource({ type: 'postgres', url: db.url, poolSize: 4 }).initialize();
    keys = new ApiKeyRepository(ds);
    mints = new ApiKeyWriteRepository(ds);
    verification = new ApiKeyVerificationStore(ds, clock);
  });
  afterAll(async () => {
    await ds?.destroy();
    await db?.drop();
  });

  /** An org with one member (the key owner). */
  async function owner(role: 'owner' | 'member' = 'owner') {
    const orgId = await seed.org();
    const user = await seed.user();
    await seed.member(orgId, user.id, role);
    return { orgId, userId: user.id, email: user.email };
  }

  function newKey(o: { userId: string; orgId: string }, extra: Partial<NewApiKey> = {}): NewApiKey {
    const g = generateApiKey();
    return {
      id: randomUUID(),
      userId: o.userId,
      orgId: o.orgId,
      name: 'k',
      lookup: g.lookup,
      last4: g.last4,
      keyHash: randomBytes(32),
      scopes: ['decisions:read'],
      createdAt: NOW,
      expiresAt: null,
      ...extra,
    };
  }

  const audit = (k: NewApiKey): NewAuditRow => ({
    createdAt: k.createdAt,
    orgId: k.orgId,
    action: 'api_key.minted',
    actorType: 'user',
    actorId: k.userId,
    actorSource: null,
    credentialType: 'session',
    credentialId: null,
    targetType: 'api_key',
    targetId: k.id,
    clientAddress: null,
    userAgent: null,
    requestId: null,
    details: { name: k.name },
  });

  /** Mints without events, under a cap that never refuses. */
  async function mint(o: { userId: string; orgId: string }, extra: Partial<NewApiKey> = {}): Promise<NewApiKey> {
    const key = newKey(o, extra);
    expect(await mints.mintWithinCap({ key, audit: null, event: null }, 1000)).not.toBeNull();
    return key;
  }

  const count = async (sql: string, values: unknown[]) => Number((await db.pool.query(sql, values)).rows[0].n);

  describe('minting under the cap', () => {
    it('writes the key, its audit event and its outbox event together', async () => {
      const o = await owner();
      const key = newKey(o);
      const write: MintWrite = {
        key,
        audit: audit(key),
        event: { orgId: o.orgId, type: 'api_key.created', data: { id: key.id }, at: NOW },
      };
      const minted = await mints.mintWithinCap(write, 5);
      expect(minted).toMatchObject({ id: key.id, lookup: key.lookup, revokedAt: null, previousLookup: null });
      expect(await count(`SELECT count(*) n FROM api_keys WHERE id = $1`, [key.id])).toBe(1);
      expect(
        await count(`SELECT count(*) n FROM audit_events WHERE target_id = $1 AND action = 'api_key.minted'`, [key.id]),
      ).toBe(1);
      expect(
        await count(`SELECT count(*) n FROM event_outbox WHERE data->>'id' = $1 AND type = 'api_key.created'`, [
          key.id,
        ]),
      ).toBe(1);
    });

    it('refuses at the cap and writes nothing, neither key nor events', async () => {
      const o = await owner();
      await mint(o);
      await mint(o);
      const key = newKey(o);
      const refused = await mints.mintWithinCap(
        { key, audit: audit(key), event: { orgId: o.orgId, type: 'api_key.created', data: { id: key.id }, at: NOW } },
        2,
      );
      expect(refused).toBeNull();
      expect(await count(`SELECT count(*) n FROM api_keys WHERE id = $1`, [key.id])).toBe(0);
      expect(await count(`SELECT count(*) n FROM audit_events WHERE target_id = $1`, [key.id])).toBe(0);
      expect(await count(`SELECT count(*) n FROM event_outbox WHERE data->>'id' = $1`, [key.id])).toBe(0);
    });

    it('does not count expired keys against the cap (the exact path recounts)', async () => {
      const o = await owner();
      await mint(o, { createdAt: at(-2 * HOUR), expiresAt: at(-HOUR) });
      await mint(o, { createdAt: at(-2 * HOUR), expiresAt: at(-HOUR) });
      expect(await mints.mintWithinCap({ key: newKey(o), audit: null, event: null }, 2)).not.toBeNull();
    });
  });

  describe('listing', () => {
    it("lists a user's keys newest first, by org, by state (one rule), page by page", async () => {
      const o = await owner();
      const other = await seed.org();
      await seed.member(other, o.userId, 'member');
      const active = await mint(o, { createdAt: at(-4000) });
      const expired = await mint(o, { createdAt: at(-3000), expiresAt: at(-1) });
      const revoked = await mint(o, { createdAt: at(-2000), expiresAt: at(-1) });
      await keys.revoke('id', revoked.id, revoked.id, at(-500));
      const elsewhere = await mint({ userId: o.userId, orgId: other }, { createdAt: at(-1000) });
      const list = (filter: Partial<Parameters<ApiKeyRepository['listOwned']>[1]>) =>
        keys.listOwned(o.userId, { orgId: null, state: null, after: null, take: 10, now: NOW, ...filter });

      expect((await list({})).map((k) => [k.id, k.state])).toEqual([
        [elsewhere.id, 'active'],
        [revoked.id, 'revoked'],
        [expired.id, 'expired'],
        [active.id, 'active'],
      ]);
      expect((await list({ orgId: o.orgId })).map((k) => k.id)).toEqual([revoked.id, expired.id, active.id]);
      expect((await list({ state: 'active' })).map((k) => k.id)).toEqual([elsewhere.id, active.id]);
      expect((await list({ state: 'expired' })).map((k) => k.id)).toEqual([expired.id]);
      expect((await list({ state: 'revoked' })).map((k) => k.id)).toEqual([revoked.id]);
      const first = await list({ take: 2 });
      const rest = await list({ after: { createdAt: first[1].createdAt, id: first[1].id } });
      expect([...first, ...rest].map((k) => k.id)).toEqual([elsewhere.id, revoked.id, expired.id, active.id]);
      expect(first[0]).toMatchObject({
        userId: o.userId,
        orgId: other,
        keyHash: elsewhere.keyHash,
        createdAt: elsewhere.createdAt,
      });
    });

    it("lists an org's keys with each owner's e-mail and standing, by owner and state", async () => {
      const o = await owner();
      const leaver = await seed.user();
      await seed.member(o.orgId, leaver.id, 'member');
      const mine = await mint(o, { createdAt: at(-2000) });
      const theirs = await mint({ userId: leaver.id, orgId: o.orgId }, { createdAt: at(-1000), expiresAt: at(-1) });
      await mint(await owner(), { createdAt: at(-500) }); // another org's key
      await seed.removeMember(o.orgId, leaver.id);

      const all = await keys.listInOrg({ orgId: o.orgId, now: NOW }, null, 10);
      expect(all.map((k) => [k.id, k.state, k.ownerEmail, k.ownerIsMember])).toEqual([
        [theirs.id, 'expired', leaver.email, false],
        [mine.id, 'active', o.email, true],
      ]);
      expect((await keys.listInOrg({ orgId: o.orgId, userId: o.userId, now: NOW }, null, 10)).map((k) => k.id)).toEqual(
        [mine.id],
      );
      expect((await keys.listInOrg({ orgId: o.orgId, state: 'expired', now: NOW }, null, 10)).map((k) => k.id)).toEqual(
        [theirs.id],
      );
      // `limit + 1` rows: the look-ahead row tells the caller another page exists.
      const page = await keys.listInOrg({ orgId: o.orgId, now: NOW }, null, 1);
      expect(page).toHaveLength(2);
      expect(
        (await keys.listInOrg({ orgId: o.orgId, now: NOW }, { createdAt: page[0].createdAt, id: page[0].id }, 1)).map(
          (k) => k.id,
        ),
      ).toEqual([mine.id]);
    });

    it('tells who owns a key', async () => {
      const o = await owner();
      const k = await mint(o);
      expect(await keys.findOwnership(k.id)).toEqual({ userId: o.userId, orgId: o.orgId });
      expect(await keys.findOwnership(randomUUID())).toBeNull();
    });
  });

  describe('rotating', () => {
    it('moves the current secret to previous until the grace ends; only an active key of the caller rotates', async () => {
      const o = await owner();
      const k = await mint(o);
      const next = { lookup: generateApiKey().lookup, last4: 'abcd', keyHash: randomBytes(32) };
      const rotated = await keys.rotateOwned(o.userId, k.id, next, NOW, at(HOUR));
      expect(rotated).toMatchObject({
        id: k.id,
        lookup: next.lookup,
        last4: 'abcd',
        previousLookup: k.lookup,
        previousKeyHash: k.keyHash,
        previousExpiresAt: at(HOUR),
      });
      expect(await keys.rotateOwned((await seed.user()).id, k.id, next, NOW, null)).toBeNull();

      const again = { lookup: generateApiKey().lookup, last4: 'efgh', keyHash: randomBytes(32) };
      expect(await keys.rotateOwned(o.userId, k.id, again, NOW, null)).toMatchObject({
        lookup: again.lookup,
        previousLookup: null,
        previousExpiresAt: null,
      });

      const expired = await mint(o, { createdAt: at(-2 * HOUR), expiresAt: at(-HOUR) });
      expect(await keys.rotateOwned(o.userId, expired.id, next, NOW, null)).toBeNull();
      expect(await keys.keyStanding(o.userId, expired.id)).toEqual({
        revokedAt: null,
        expiresAt: at(-HOUR),
        orgId: o.orgId,
      });
      expect(await keys.keyStanding(o.userId, randomUUID())).toBeNull();
    });
  });

  describe('revoking', () => {
    const template = (userId: string, action: 'api_key.revoked' | 'api_key.revoked_by_admin'): AuditTemplate => ({
      createdAt: NOW,
      action,
      actorType: 'user',
      actorId: userId,
      actorSource: null,
      credentialType: 'session',
      credentialId: null,
      targetType: 'api_key',
      clientAddress: null,
      userAgent: null,
      requestId: null,
      details: {},
    });
    const events = async (keyId: string) =>
      (await db.pool.query(`SELECT type, data FROM event_outbox WHERE data->>'id' = $1`, [keyId])).rows;

    it("revokes the owner's key with its audit and event once; a repeat keeps revoked_at and writes nothing", async () => {
      const o = await owner();
      const k = await mint(o, { name: 'ci svc_live_notakey' });
      const write: RevokeWrite = {
        audit: { template: template(o.userId, 'api_key.revoked'), withOwner: false },
        event: { revokedBy: o.userId },
      };
      expect(await mints.revokeWriting('user_id', (await seed.user()).id, k.id, NOW, write)).toBeNull();
      const first = await mints.revokeWriting('user_id', o.userId, k.id, NOW, write);
      expect(first).toMatchObject({
        id: k.id,
        orgId: o.orgId,
        alreadyRevoked: false,
        revokedAt: NOW,
        lookup: k.lookup,
      });
      const again = await mints.revokeWriting('user_id', o.userId, k.id, at(HOUR), write);
      expect(again).toMatchObject({ alreadyRevoked: true, revokedAt: NOW });
      const audits = await seed.auditEvents(o.orgId);
      expect(audits.map((a) => [a.action, a.target_id, Object.keys(a.details)])).toEqual([
        ['api_key.revoked', k.id, ['name']],
      ]);
      expect(await events(k.id)).toEqual([
        { type: 'api_key.revoked', data: expect.objectContaining({ id: k.id, revoked_by: o.userId }) },
      ]);
    });

    it("revokes any key of the admin's org, naming its owner, and no key of another org", async () => {
      const o = await owner();
      const admin = await seed.user();
      await seed.member(o.orgId, admin.id, 'admin');
      const k = await mint(o);
      const write: RevokeWrite = {
        audit: { template: template(admin.id, 'api_key.revoked_by_admin'), withOwner: true },
        event: null,
      };
      expect(await mints.revokeWriting('org_id', await seed.org(), k.id, NOW, write)).toBeNull();
      expect(await mints.revokeWriting('org_id', o.orgId, k.id, NOW, write)).toMatchObject({ alreadyRevoked: false });
      const [event] = await seed.auditEvents(o.orgId);
      expect(event).toMatchObject({
        action: 'api_key.revoked_by_admin',
        actor_id: admin.id,
        details: { name: 'k', owner_id: o.userId },
      });
      expect(await events(k.id)).toEqual([]);
    });

    it('revokes a key by id alone (a reported leak), in the caller’s transaction', async () => {
      const o = await owner();
      const k = await mint(o);
      await ds.transaction(async (m) => {
        expect(await keys.revoke('id', k.id, k.id, NOW, m)).toMatchObject({ id: k.id, alreadyRevoked: false });
      });
      expect(await keys.revoke('id', k.id, k.id, at(HOUR))).toMatchObject({ alreadyRevoked: true, revokedAt: NOW });
      expect(await keys.revoke('id', randomUUID(), randomUUID(), NOW)).toBeNull();
    });

    it('forgets a rotated-out secret when the key is revoked', async () => {
      const o = await owner();
      const k = await mint(o);
      await keys.rotateOwned(
        o.userId,
        k.id,
        { lookup: generateApiKey().lookup, last4: 'zzzz', keyHash: randomBytes(32) },
        NOW,
        at(HOUR),
      );
      await keys.revoke('id', k.id, k.id, NOW);
      const { rows } = await db.pool.query(
        `SELECT previous_lookup, previous_key_hash, previous_expires_at FROM api_keys WHERE id = $1`,
        [k.id],
      );
      expect(rows[0]).toEqual({ previous_lookup: null, previous_key_hash: null, previous_expires_at: null });
    });
  });

  describe('previous secrets, lookups and verification', () => {
    /** A key rotated at NOW with a one-hour grace: `old` is its previous lookup. */
    async function rotatedKey() {
      const o = await owner();
      const k = await mint(o);
      const next = { lookup: generateApiKey().lookup, last4: 'nnnn', keyHash: randomBytes(32) };
      await keys.rotateOwned(o.userId, k.id, next, NOW, at(HOUR));
      return { o, id: k.id, old: k, current: next };
    }

    it('finds keys by current lookup, and by previous lookup only during the grace', async () => {
      const { id, old, current } = await rotatedKey();
      const lookups = [old.lookup, current.lookup];
      const during = await keys.findByLookups(lookups, at(HOUR - 1));
      expect(during.map((r) => [r.id, r.lookup, r.keyHash]).sort()).toEqual(
        [
          [id, current.lookup, current.keyHash],
          [id, old.lookup, old.keyHash],
        ].sort(),
      );
      expect(await keys.findByLookups(lookups, at(HOUR))).toEqual([
        { id, orgId: expect.any(String), lookup: current.lookup, keyHash: current.keyHash },
      ]);
    });

    it('reads a key for verification with its owner, org and meters; a previous secret only during its grace', async () => {
      const { o, id, old, current } = await rotatedKey();
      await db.pool.query(`INSERT INTO usage_counters (org_id, day, asks) VALUES ($1, '2031-06-01', 7)`, [o.orgId]);
      clock.set(at(HOUR - 1));
      const [row] = await verification.findForVerification([old.lookup], [old.keyHash], true, '2031-06-01');
      expect(row).toMatchObject({
        id,
        lookup: current.lookup,
        previousLookup: old.lookup,
        previousKeyHash: old.keyHash,
        previousExpiresAt: at(HOUR),
        userId: o.userId,
        orgId: o.orgId,
        email: o.email,
        role: 'owner',
        plan: 'free',
        memberCount: 1,
        usage: { asks: 7, retrieves: 0, imports: 0, captures: 0 },
      });
      const [keysOnly] = await verification.findForVerification(
        [current.lookup],
        [current.keyHash],
        false,
        '2031-06-01',
      );
      expect(keysOnly).toMatchObject({ id, email: null, role: null, memberCount: 0, usage: { asks: 7 } });
      // A lookup with another hash reads nothing: a wrong secret sends back no row to decode.
      expect(await verification.findForVerification([current.lookup], [old.keyHash], true, '2031-06-01')).toEqual([]);
      expect(await verification.findForVerification([old.lookup], [current.keyHash], true, '2031-06-01')).toEqual([]);

      clock.set(at(HOUR));
      expect(await verification.findForVerification([old.lookup], [old.keyHash], true, '2031-06-01')).toEqual([]);
      const [byCurrent] = await verification.findForVerification(
        [current.lookup, old.lookup],
        [current.keyHash, old.keyHash],
        true,
        '2031-06-01',
      );
      expect(byCurrent).toMatchObject({ id, previousLookup: null, previousKeyHash: null, previousExpiresAt: null });
      clock.set(NOW);
    });

    it('clears the previous secrets whose grace has ended, and only those', async () => {
      const lapsed = await rotatedKey();
      const later = await rotatedKey();
      await keys.rotateOwned(
        later.o.userId,
        later.id,
        { lookup: generateApiKey().lookup, last4: 'llll', keyHash: randomBytes(32) },
        NOW,
        at(3 * HOUR),
      );
      const previous = async (id: string) =>
        (
          await db.pool.query(
            `SELECT previous_lookup, previous_key_hash, previous_expires_at FROM api_keys WHERE id = $1`,
            [id],
          )
        ).rows[0];

      expect(await keys.clearLapsedPreviousSecrets(at(HOUR))).toBeGreaterThanOrEqual(1);
      expect(await previous(lapsed.id)).toEqual({
        previous_lookup: null,
        previous_key_hash: null,
        previous_expires_at: null,
      });
      expect(await previous(later.id)).toMatchObject({
        previous_lookup: later.current.lookup,
        previous_expires_at: at(3 * HOUR),
      });
      expect(await keys.clearLapsedPreviousSecrets(at(HOUR))).toBe(0);
    });

    it('writes last_used_at behind, at most once a minute per key', async () => {
      const k = await mint(await owner());
      const lastUsed = async () =>
        (await db.pool.query(`SELECT last_used_at FROM api_keys WHERE id = $1`, [k.id])).rows[0].last_used_at;
      await verification.touchLastUsed([k.id], [NOW]);
      expect(await lastUsed()).toEqual(NOW);
      await verification.touchLastUsed([k.id], [at(59_000)]);
      expect(await lastUsed()).toEqual(NOW);
      await verification.touchLastUsed([k.id], [at(60_000)]);
      expect(await lastUsed()).toEqual(at(60_000));
    });
  });
});
