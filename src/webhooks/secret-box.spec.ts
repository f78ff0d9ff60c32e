import { createSecretKey } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { newSigningSecret, SecretBox } from './secret-box.js';

const key = (s: string) => createSecretKey(Buffer.from(s));

describe('SecretBox', () => {
  it('seals a signing secret so that the stored bytes do not contain it, and opens it again', () => {
    const secret = newSigningSecret();
    const box = new SecretBox(key('a'.repeat(40)));
    const sealed = box.seal(secret);
    expect(sealed.toString('latin1')).not.toContain(secret.slice(6));
    expect(box.open(sealed)).toBe(secret);
  });

  it('cannot be opened under another API_KEY_SECRET, nor after tampering', () => {
    const sealed = new SecretBox(key('a'.repeat(40))).seal(newSigningSecret());
    expect(() => new SecretBox(key('b'.repeat(40))).open(sealed)).toThrow();
    const tampered = Buffer.from(sealed);
    tampered[tampered.length - 1] ^= 1;
    expect(() => new SecretBox(key('a'.repeat(40))).open(tampered)).toThrow();
  });

  it('makes Standard Webhooks secrets: whsec_ and 32 random bytes in base64', () => {
    const s = newSigningSecret();
    expect(s).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(s.slice(6), 'base64')).toHaveLength(32);
    expect(newSigningSecret()).not.toBe(s);
  });
});
