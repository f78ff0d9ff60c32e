import { createHmac, createSecretKey } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  generateApiKey,
  hashApiKey,
  hashesEqual,
  KEY_LENGTH,
  KEY_PREFIX,
  looksLikeApiKey,
  parseApiKey,
} from './api-key-format.js';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** The documented layout: prefix, 12-character lookup, `_`, 32-character secret, 6-character checksum. */
const LAYOUT = /^svc_live_([A-Za-z0-9]{12})_([A-Za-z0-9]{32})([A-Za-z0-9]{6})$/;

/** CRC32 of everything before the checksum, as six base62 digits: computed here independently. */
function expectedChecksum(body: string): string {
  let n = crc32(body);
  let out = '';
  for (let i = 0; i < 6; i++) {
    out = BASE62[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

describe('generateApiKey', () => {
  afterEach(() => vi.restoreAllMocks());

  it('writes svc_live_ + lookup + _ + secret + checksum, in [A-Za-z0-9_] only', () => {
    const { key } = generateApiKey();
    expect(key).toMatch(LAYOUT);
    expect(key).toMatch(/^[A-Za-z0-9_]+$/);
    expect(key.startsWith(KEY_PREFIX)).toBe(true);
    expect(key).toHaveLength(KEY_LENGTH);
  });

  it('reports the lookup as it appears inside the key and last4 as its last four characters', () => {
    const { key, lookup, last4 } = generateApiKey();
    expect(LAYOUT.exec(key)?.[1]).toBe(lookup);
    expect(last4).toBe(key.slice(-4));
  });

  it('ends the key with the CRC32 checksum of everything before it', () => {
    const { key } = generateApiKey();
    expect(key.slice(-6)).toBe(expectedChecksum(key.slice(0, -6)));
  });

  it('draws a secret of at least 128 bits', () => {
    const secret = LAYOUT.exec(generateApiKey().key)?.[2] ?? '';
    expect(secret.length * Math.log2(62)).toBeGreaterThanOrEqual(128);
  });

  it('never repeats a key or a lookup', () => {
    const keys = Array.from({ length: 2000 }, () => generateApiKey());
    expect(new Set(keys.map((k) => k.key)).size).toBe(2000);
    expect(new Set(keys.map((k) => k.lookup)).size).toBe(2000);
  });

  it('does not draw from Math.random', () => {
    vi.spyOn(Math, 'random').mockReturnValue(0);
    expect(generateApiKey().key).not.toBe(generateApiKey().key);
    expect(Math.random).not.toHaveBeenCalled();
  });

  it('uses every character of the alphabet', () => {
    const seen = new Set(Array.from({ length: 200 }, () => LAYOUT.exec(generateApiKey().key)?.[2] ?? '').join(''));
    expect(seen.size).toBe(62);
  });
});

describe('parseApiKey', () => {
  it('gives the lookup of a freshly generated key', () => {
    const generated = generateApiKey();
    expect(parseApiKey(generated.key)).toBe(generated.lookup);
  });

  it('still reads a key of the documented format written by hand (issued keys keep parsing)', () => {
    expect(parseApiKey('svc_live_Lk3hQ9ZpX0aB_7fGv2KqW9sTn4YbE1cRm8DuJ5hXo0LzP3ZJUe8')).toBe('Lk3hQ9ZpX0aB');
  });

  it('refuses the key with any single character replaced, wherever it is', () => {
    const { key } = generateApiKey();
    for (let i = KEY_PREFIX.length; i < key.length; i++) {
      if (key[i] === '_') continue;
      for (const c of ['0', 'z', 'Q']) {
        if (c === key[i]) continue;
        const changed = key.slice(0, i) + c + key.slice(i + 1);
        expect(parseApiKey(changed), `position ${i} -> ${c}`).toBeNull();
      }
    }
  });

  it('refuses the key with two neighbouring characters swapped', () => {
    const { key } = generateApiKey();
    for (let i = KEY_PREFIX.length; i < key.length - 7; i++) {
      if (key[i] === key[i + 1] || key[i] === '_' || key[i + 1] === '_') continue;
      const swapped = key.slice(0, i) + key[i + 1] + key[i] + key.slice(i + 2);
      expect(parseApiKey(swapped), `swap at ${i}`).toBeNull();
    }
  });

  it.each([
    ['another prefix', (k: string) => k.replace('svc_live_', 'svc_test_')],
    ['one character short', (k: string) => k.slice(0, -1)],
    ['one character too many', (k: string) => `${k}A`],
    ['a character outside the alphabet', (k: string) => `${k.slice(0, 30)}-${k.slice(31)}`],
    ['no separator after the lookup', (k: string) => `${k.slice(0, 21)}A${k.slice(22)}`],
    ['surrounding space', (k: string) => ` ${k.slice(1)}`],
    ['nothing but the prefix', () => 'svc_live_'],
    ['an empty string', () => ''],
  ])('refuses a key with %s', (_, mangle) => {
    expect(parseApiKey(mangle(generateApiKey().key))).toBeNull();
  });

  it('refuses a well-formed body whose checksum was computed over something else', () => {
    const a = generateApiKey().key;
    const b = generateApiKey().key;
    expect(parseApiKey(a.slice(0, -6) + b.slice(-6))).toBeNull();
  });
});

describe('looksLikeApiKey', () => {
  it('tells key-shaped tokens (svc_live_…) from anything else, such as a JWT', () => {
    expect(looksLikeApiKey(generateApiKey().key)).toBe(true);
    expect(looksLikeApiKey('svc_live_broken')).toBe(true);
    expect(looksLikeApiKey('eyJhbGciOiJIUzI1NiJ9.e30.x')).toBe(false);
    expect(looksLikeApiKey('SVC_LIVE_x')).toBe(false);
  });
});

describe('hashApiKey', () => {
  const secret = 'unit-test-api-key-secret-0123456789abcdef';
  const secretKey = createSecretKey(Buffer.from(secret, 'utf8'));

  it('is the HMAC-SHA-256 of the whole key under API_KEY_SECRET', () => {
    const { key } = generateApiKey();
    const hash = hashApiKey(secretKey, key);
    expect(hash).toHaveLength(32);
    expect(hash.equals(createHmac('sha256', secret).update(key).digest())).toBe(true);
  });

  it('depends on the secret and on every character of the key', () => {
    const { key } = generateApiKey();
    const other = createSecretKey(Buffer.from(`${secret}!`, 'utf8'));
    expect(hashApiKey(secretKey, key).equals(hashApiKey(other, key))).toBe(false);
    expect(hashApiKey(secretKey, key).equals(hashApiKey(secretKey, `${key.slice(0, -1)}x`))).toBe(false);
  });

  it('does not contain the key or its secret in any form', () => {
    const { key, lookup } = generateApiKey();
    const hash = hashApiKey(secretKey, key);
    const secretPart = key.slice(key.indexOf(lookup) + lookup.length);
    for (const form of [hash.toString('hex'), hash.toString('base64'), hash.toString('latin1')]) {
      expect(form).not.toContain(key);
      expect(form).not.toContain(secretPart);
    }
  });
});

describe('hashesEqual', () => {
  it('is true for equal hashes and false for different ones, including different lengths, without throwing', () => {
    const a = createHmac('sha256', 'k').update('a').digest();
    const b = createHmac('sha256', 'k').update('b').digest();
    expect(hashesEqual(a, Buffer.from(a))).toBe(true);
    expect(hashesEqual(a, b)).toBe(false);
    expect(hashesEqual(a, a.subarray(0, 16))).toBe(false);
    expect(hashesEqual(Buffer.alloc(0), a)).toBe(false);
  });
});
