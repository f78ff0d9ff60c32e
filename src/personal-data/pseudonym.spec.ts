import { createSecretKey } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Pseudonyms, tombstoneEmail } from './pseudonym.js';

const key = (s: string) => createSecretKey(Buffer.from(s));
const USER = '5b4f0f5e-0c57-4a8a-9b44-8f0a3c1d2e3f';

describe('the pseudonym of an erased person', () => {
  it('is a version-8 UUID, the same for the same id in any case, different for another id', () => {
    const p = new Pseudonyms(key('secret-one-0123456789abcdef'));
    expect(p.of(USER)).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(p.of(USER.toUpperCase())).toBe(p.of(USER));
    expect(new Pseudonyms(key('secret-one-0123456789abcdef')).of(USER)).toBe(p.of(USER));
    expect(p.of('5b4f0f5e-0c57-4a8a-9b44-8f0a3c1d2e30')).not.toBe(p.of(USER));
  });

  it('depends on API_KEY_SECRET: without it, nobody computes it from an id', () => {
    expect(new Pseudonyms(key('secret-two-0123456789abcdef')).of(USER)).not.toBe(
      new Pseudonyms(key('secret-one-0123456789abcdef')).of(USER),
    );
  });

  it('the tombstone e-mail is unique per user and under .invalid', () => {
    expect(tombstoneEmail(USER.toUpperCase())).toBe(`erased-${USER}@erased.invalid`);
  });
});
