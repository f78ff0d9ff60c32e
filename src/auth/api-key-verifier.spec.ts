import { createSecretKey } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import {
  connectionRefused,
  deferred,
  FakeKeyRows,
  misChecksummed,
  ORG,
  SECRET,
  verifierOver,
} from '../../test/support/key-verification.js';
import { memberKey, OrgDirectory, type MemberContext } from '../directory/org-directory.js';
import { generateApiKey, hashApiKey, hashesEqual } from './api-key-format.js';

// The real functions, observed: a missing key must cost the same keyed hash and comparison as a wrong one.
vi.mock('./api-key-format.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('./api-key-format.js')>();
  return { ...real, hashApiKey: vi.fn(real.hashApiKey), hashesEqual: vi.fn(real.hashesEqual) };
});

describe('ApiKeyVerifier', () => {
  it('accepts both secrets of a rotated key during its grace period, and the old one not from its end', async () => {
    const keys = new FakeKeyRows();
    const old = generateApiKey();
    const current = generateApiKey();
    const hmac = (k: string) => hashApiKey(createSecretKey(Buffer.from(SECRET)), k);
    const row = keys.add(current, {
      previousLookup: old.lookup,
      previousKeyHash: hmac(old.key),
      previousExpiresAt: new Date('2030-01-15T12:00:01Z'),
    });
    const { verifier } = verifierOver(keys);
    expect((await verifier.verify(current.key))?.keyId).toBe(row.id);
    expect((await verifier.verify(old.key))?.keyId).toBe(row.id);
    // A forged secret under the old lookup is refused like any other.
    const forged =
      old.key.slice(0, old.key.indexOf(old.lookup) + old.lookup.length) +
      current.key.slice(current.key.indexOf(current.lookup) + current.lookup.length);
    expect(await verifier.verify(forged)).toBeNull();

    row.previousExpiresAt = new Date('2030-01-15T12:00:00Z'); // the clock's instant: the grace has ended
    expect(await verifier.verify(old.key)).toBeNull();
    expect((await verifier.verify(current.key))?.keyId).toBe(row.id);

    row.revokedAt = new Date('2030-01-01T00:00:00Z');
    row.previousExpiresAt = new Date('2031-01-01T00:00:00Z');
    expect(await verifier.verify(old.key)).toBeNull();
    expect(await verifier.verify(current.key)).toBeNull();
  });

  it('does the same keyed-hash work for a lookup id that does not exist as for one that does', async () => {
    const keys = new FakeKeyRows();
    const known = generateApiKey();
    keys.add(known, { keyHash: Buffer.alloc(32, 7) }); // its lookup id exists, its secret does not match
    const { verifier } = verifierOver(keys);
    const forged = generateApiKey();
    for (const token of [forged.key, known.key]) {
      vi.mocked(hashApiKey).mockClear();
      vi.mocked(hashesEqual).mockClear();
      await Promise.resolve(verifier.verify(token)).catch(() => null);
      expect(
        vi.mocked(hashApiKey),
        token === forged.key ? 'missing lookup id' : 'known lookup id',
      ).toHaveBeenCalledTimes(1);
      // Against the cached row's hash or its stand-in, then against the read row's or its stand-in.
      expect(vi.mocked(hashesEqual)).toHaveBeenCalledTimes(2);
    }
    // Neither read brought a row back: the statement matches the hash as well as the lookup id.
    expect(
      await keys.repository.findForVerification([known.lookup], [Buffer.alloc(32, 8)], true, '2030-01-15'),
    ).toEqual([]);
  });

  it('gives each of many concurrent verifications of mixed keys its own answer, from one statement', async () => {
    const keys = new FakeKeyRows();
    const valid = generateApiKey();
    const validRow = keys.add(valid);
    const viewer = generateApiKey();
    const viewerRow = keys.add(viewer, { role: 'viewer' });
    const revoked = generateApiKey();
    keys.add(revoked, { revokedAt: new Date('2030-01-01T00:00:00Z') });
    const expired = generateApiKey();
    keys.add(expired, { expiresAt: new Date('2030-01-15T11:59:59Z') });
    const formerMember = generateApiKey();
    keys.add(formerMember, { role: null, email: null, plan: null, memberCount: 0 });
    const unknown = generateApiKey();
    // Right lookup, wrong secret: the stored hash is another key's.
    const forged = generateApiKey();
    keys.add(forged, { keyHash: hashApiKey(createSecretKey(Buffer.from(SECRET)), generateApiKey().key) });
    const malformed = misChecksummed(generateApiKey().key);

    const { verifier, metrics } = verifierOver(keys);
    const expected = new Map<string, 'valid' | 'viewer' | null>([
      [valid.key, 'valid'],
      [viewer.key, 'viewer'],
      [revoked.key, null],
      [expired.key, null],
      [formerMember.key, null],
      [unknown.key, null],
      [forged.key, null],
      [malformed, null],
    ]);
    const tokens = Array.from({ length: 48 }, (_, i) => [...expected.keys()][(i * 5) % expected.size]);

    const results = await Promise.all(tokens.map((t) => verifier.verify(t)));

    tokens.forEach((token, i) => {
      const want = expected.get(token);
      if (want === null) expect(results[i], `answer for request ${i}`).toBeNull();
      else {
        const row = want === 'valid' ? validRow : viewerRow;
        expect(results[i], `answer for request ${i}`).toEqual({
          kind: 'api_key',
          keyId: row.id,
          userId: row.userId,
          email: row.email,
          orgId: ORG,
          orgRole: row.role,
          orgMemberCount: 3,
          plan: 'free',
          scopes: want === 'valid' ? ['decisions:read', 'decisions:write'] : ['decisions:read'],
        });
      }
    });
    // One statement for the whole batch, each lookup asked once, the mis-checksummed key never asked.
    expect(keys.calls).toHaveLength(1);
    expect(keys.calls[0].withDirectory).toBe(true);
    expect(new Set(keys.calls[0].lookups)).toEqual(
      new Set([valid, viewer, revoked, expired, formerMember, unknown, forged].map((k) => k.lookup)),
    );
    expect(keys.calls[0].lookups).toHaveLength(7);
    expect(metrics.counts.ok).toBe(tokens.filter((t) => expected.get(t) !== null).length);
    expect(metrics.counts.malformed).toBe(tokens.filter((t) => t === malformed).length);
  });

  it('does not let a request join a batch already in flight, so a revoke between them is seen', async () => {
    const keys = new FakeKeyRows();
    const key = generateApiKey();
    keys.add(key);
    const { verifier } = verifierOver(keys);
    const gate = deferred<void>();
    keys.gate = gate.promise;

    const first = verifier.verify(key.key);
    await vi.waitFor(() => expect(keys.calls).toHaveLength(1));
    // The key is revoked after the first statement left but before its answer came back.
    keys.rows.get(key.lookup)!.revokedAt = new Date('2030-01-15T11:00:00Z');
    const second = verifier.verify(key.key);
    gate.resolve();

    expect(await first).not.toBeNull();
    expect(await second).toBeNull();
    expect(keys.calls).toHaveLength(2);
  });

  it('fails only the batch whose statement failed, and the next batch answers normally', async () => {
    const keys = new FakeKeyRows();
    const a = generateApiKey();
    const b = generateApiKey();
    keys.add(a);
    keys.add(b);
    const { verifier } = verifierOver(keys);
    const gate = deferred<void>();
    keys.gate = gate.promise;

    const failing = [verifier.verify(a.key), verifier.verify(b.key), verifier.verify(a.key)];
    await vi.waitFor(() => expect(keys.calls).toHaveLength(1));
    const later = [verifier.verify(a.key), verifier.verify(b.key)];
    await vi.waitFor(() => expect(keys.calls).toHaveLength(2));
    gate.reject(connectionRefused());

    const settled = await Promise.allSettled(failing);
    for (const s of settled) {
      expect(s.status).toBe('rejected');
      expect((s as PromiseRejectedResult).reason).toMatchObject({ code: 'ECONNREFUSED' });
    }
    const answers = await Promise.all(later);
    expect(answers.map((p) => p?.keyId)).toEqual([keys.rows.get(a.lookup)!.id, keys.rows.get(b.lookup)!.id]);

    // And the verifier keeps working after the failure.
    expect(await verifier.verify(b.key)).not.toBeNull();
  });

  it('refuses a mis-checksummed or non-key token without asking the database', async () => {
    const keys = new FakeKeyRows();
    const key = generateApiKey();
    keys.add(key);
    const { verifier } = verifierOver(keys);

    expect(await verifier.verify(misChecksummed(key.key))).toBeNull();
    expect(await verifier.verify('svc_live_short')).toBeNull();
    expect(await verifier.verify(`${key.key}x`)).toBeNull();
    expect(keys.calls).toHaveLength(0);
  });

  it('with a host directory, asks it once per batch for the live keys owners and applies their current role', async () => {
    const keys = new FakeKeyRows();
    const live = generateApiKey();
    const liveRow = keys.add(live, { email: null, role: null, plan: null, memberCount: 0 });
    const revoked = generateApiKey();
    keys.add(revoked, {
      email: null,
      role: null,
      plan: null,
      memberCount: 0,
      revokedAt: new Date('2030-01-01T00:00:00Z'),
    });
    const gone = generateApiKey();
    keys.add(gone, { email: null, role: null, plan: null, memberCount: 0 });

    const asked: Array<ReadonlyArray<{ userId: string; orgId: string }>> = [];
    class HostDirectory extends OrgDirectory {
      mintStanding = vi.fn();
      userOrgs = vi.fn();
      orgPlan = vi.fn();
      async memberContexts(
        pairs: ReadonlyArray<{ userId: string; orgId: string }>,
      ): Promise<Map<string, MemberContext>> {
        asked.push(pairs);
        const ctx: MemberContext = {
          userId: liveRow.userId,
          orgId: ORG,
          email: 'host@example.com',
          role: 'viewer',
          plan: 'pro',
          memberCount: 9,
        };
        return new Map([[memberKey(liveRow.userId, ORG), ctx]]);
      }
    }
    const { verifier } = verifierOver(keys, new HostDirectory());

    const [a, b, c] = await Promise.all([
      verifier.verify(live.key),
      verifier.verify(revoked.key),
      verifier.verify(gone.key),
    ]);

    expect(a).toMatchObject({
      email: 'host@example.com',
      orgRole: 'viewer',
      plan: 'pro',
      orgMemberCount: 9,
      scopes: ['decisions:read'],
    });
    expect(b).toBeNull();
    expect(c).toBeNull();
    // eslint-disable-next-line @typescript-eslint/no-unsafe-assignment -- vitest types asymmetric matchers as `any`
    expect(keys.calls).toEqual([{ lookups: expect.any(Array), withDirectory: false }]);
    expect(asked).toHaveLength(1);
    expect(asked[0]).toHaveLength(2);
  });
});
