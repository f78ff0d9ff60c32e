import { describe, expect, it, vi } from 'vitest';
import { withChecksum, wrongSecretFor } from '../../test/support/forged-keys.js';
import { FakeKeyRows, NOW, ORG, verifierOver } from '../../test/support/key-verification.js';
import { generateApiKey, hashApiKey } from './api-key-format.js';

// The real keyed hash, observed: the cache's fast path must not compute it.
vi.mock('./api-key-format.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('./api-key-format.js')>();
  return { ...real, hashApiKey: vi.fn(real.hashApiKey) };
});

describe('ApiKeyVerifier, from the verification cache', () => {
  it('answers a key it has verified without re-hashing it, and still refuses every other token under that lookup id', async () => {
    const keys = new FakeKeyRows();
    const key = generateApiKey();
    keys.add(key);
    const { verifier, metrics } = verifierOver(keys, undefined, true);
    expect((await verifier.verify(key.key))?.keyId).toBeDefined();
    vi.mocked(hashApiKey).mockClear();
    for (let i = 0; i < 3; i++) expect((await verifier.verify(key.key))?.orgId).toBe(ORG);
    expect(hashApiKey).not.toHaveBeenCalled();
    expect(keys.calls).toHaveLength(1);
    expect(metrics.cacheCounts.key.hit).toBe(3);

    // Another secret under the same lookup id: the full path, the keyed hash, refused.
    const other = generateApiKey();
    const forged = withChecksum(key.key.slice(0, 22) + other.key.slice(22, 54));
    expect(await verifier.verify(forged)).toBeNull();
    // A look-alike that differs only in a character outside ASCII (same low byte as the real one).
    const i = key.key.length - 10;
    const lookalike = key.key.slice(0, i) + String.fromCharCode(key.key.charCodeAt(i) + 0x100) + key.key.slice(i + 1);
    expect(await verifier.verify(lookalike)).toBeNull();
    // As long as a key in characters, and exactly as long in UTF-8 up to where a three-byte
    // character no longer fits: the bytes compared are not the key's.
    const truncated = key.key.slice(0, key.key.length - 2) + 'é€';
    expect(truncated).toHaveLength(key.key.length);
    expect(await verifier.verify(truncated)).toBeNull();
    expect((await verifier.verify(key.key))?.orgId).toBe(ORG);
    expect(metrics.counts.unknown).toBe(1);
    expect(metrics.counts.malformed).toBe(2);
    expect(hashApiKey).toHaveBeenCalledTimes(1);
  });

  it('caches a row only once a key matched it, so a wrong secret under a real lookup id costs a read, as a missing id does', async () => {
    const keys = new FakeKeyRows();
    const key = generateApiKey();
    keys.add(key);
    const { verifier } = verifierOver(keys, undefined, true);
    const wrongSecret = wrongSecretFor(key.key);
    const missing = generateApiKey().key;
    const reads = async (token: string) => {
      const before = keys.calls.length;
      vi.mocked(hashApiKey).mockClear();
      expect(await verifier.verify(token)).toBeNull();
      expect(vi.mocked(hashApiKey)).toHaveBeenCalledTimes(1);
      return keys.calls.length - before;
    };
    // Before the key has verified, and after (its row then cached): one read each time, either way.
    for (let round = 0; round < 2; round++) {
      expect(
        [await reads(wrongSecret), await reads(wrongSecret), await reads(missing), await reads(missing)],
        `round ${round}`,
      ).toEqual([1, 1, 1, 1]);
      expect((await verifier.verify(key.key))?.orgId).toBe(ORG);
    }
    const verifiedReads = keys.calls.length;
    expect((await verifier.verify(key.key))?.orgId).toBe(ORG);
    expect(keys.calls).toHaveLength(verifiedReads);
  });

  it('refuses a cached, already verified key once it is revoked', async () => {
    const keys = new FakeKeyRows();
    const key = generateApiKey();
    const row = keys.add(key);
    const { verifier, notify } = verifierOver(keys, undefined, true);
    expect(await verifier.verify(key.key)).not.toBeNull();
    expect(await verifier.verify(key.key)).not.toBeNull();
    keys.rows.set(key.lookup, { ...row, revokedAt: new Date(NOW.getTime() - 1000) });
    notify(row.id);
    expect(await verifier.verify(key.key)).toBeNull();
    expect(await verifier.verify(key.key)).toBeNull();
  });
});
