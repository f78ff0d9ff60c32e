import { describe, expect, it } from 'vitest';
import { wrongSecretFor } from '../../test/support/forged-keys.js';
import { FakeKeyRows, NOW, verifierOver } from '../../test/support/key-verification.js';
import { generateApiKey } from './api-key-format.js';
import { VERIFICATION_OUTCOMES } from './verification-outcome-recorder.js';

const PAST = new Date(NOW.getTime() - 60_000);

describe('ApiKeyVerifier, counting what it decided for each key', () => {
  it.each([
    ['from the database', false],
    ['from the verification cache', true],
  ])(
    'counts revoked, pending, expired and disabled in the order of the key state, %s, and nothing for a credential that names no key',
    async (_, cached) => {
      const keys = new FakeKeyRows();
      const add = (over: Parameters<FakeKeyRows['add']>[1]) => {
        const key = generateApiKey();
        return { key: key.key, id: keys.add(key, over).id };
      };
      const valid = add({});
      const revoked = add({ revokedAt: PAST, pending: true, enabled: false });
      const pending = add({ pending: true, expiresAt: PAST });
      const expired = add({ expiresAt: PAST, enabled: false });
      const disabled = add({ enabled: false });
      const formerMember = add({ role: null, email: null, plan: null, memberCount: 0 });
      const { verifier, metrics, outcomes } = verifierOver(keys, undefined, cached);
      const tokens = [valid, revoked, pending, expired, disabled, formerMember].map((k) => k.key);
      tokens.push(wrongSecretFor(valid.key), generateApiKey().key);

      for (let round = 0; round < 2; round++) for (const token of tokens) await verifier.verify(token);
      await outcomes.flush();

      const counted = Object.fromEntries(
        keys.outcomes
          .flat()
          .map((r) => [
            r.keyId,
            Object.fromEntries(VERIFICATION_OUTCOMES.map((o, i) => [o, r.counts[i]]).filter(([, n]) => n)),
          ]),
      );
      // An admitted key is counted `valid` by LastUseGuard once every guard has admitted its request, not here.
      expect(counted).toEqual({
        [revoked.id]: { revoked: 2 },
        [pending.id]: { pending: 2 },
        [expired.id]: { expired: 2 },
        [disabled.id]: { disabled: 2 },
      });
      expect(keys.outcomes).toHaveLength(1);
      expect(keys.outcomes[0].every((r) => r.hour.getTime() === Date.parse('2030-01-15T12:00:00Z'))).toBe(true);
      expect(metrics.counts.pending).toBe(2);
    },
  );

  it('never caches a pending key: each of its requests reads the database, so an approval is seen at once', async () => {
    const keys = new FakeKeyRows();
    const key = generateApiKey();
    const row = keys.add(key, { pending: true });
    const { verifier } = verifierOver(keys, undefined, true);
    expect(await verifier.verify(key.key)).toBeNull();
    expect(await verifier.verify(key.key)).toBeNull();
    expect(keys.calls).toHaveLength(2);
    keys.rows.set(key.lookup, { ...row, pending: false });
    expect((await verifier.verify(key.key))?.keyId).toBe(row.id);
  });
});
