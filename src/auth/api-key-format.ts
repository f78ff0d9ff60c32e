import { createHmac, randomInt, timingSafeEqual, type KeyObject } from 'node:crypto';
import { crc32 } from 'node:zlib';

/**
 * Key string: `svc_live_` + lookup (12) + `_` + secret (32) + checksum (6), all base62.
 *   - lookup: public id, stored in clear, how verification finds the row (71 bits, random)
 *   - secret: 32 base62 characters from the CSPRNG, about 190 bits
 *   - checksum: CRC32 of everything before it, so typos and scanners' guesses are refused
 *     without touching the database (the same idea as GitHub's token checksums)
 */
export const KEY_PREFIX = 'svc_live_';
const LOOKUP_LEN = 12;
const SECRET_LEN = 32;
const CHECKSUM_LEN = 6;
export const KEY_LENGTH = KEY_PREFIX.length + LOOKUP_LEN + 1 + SECRET_LEN + CHECKSUM_LEN;

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const KEY_RE = new RegExp(
  `^${KEY_PREFIX}([0-9A-Za-z]{${LOOKUP_LEN}})_([0-9A-Za-z]{${SECRET_LEN}})([0-9A-Za-z]{${CHECKSUM_LEN}})$`,
);

function randomBase62(length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += ALPHABET[randomInt(62)];
  return out;
}

function checksum(body: string): string {
  let n = crc32(body);
  let out = '';
  for (let i = 0; i < CHECKSUM_LEN; i++) {
    out = ALPHABET[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

export interface GeneratedKey {
  key: string;
  lookup: string;
  last4: string;
}

export function generateApiKey(): GeneratedKey {
  const lookup = randomBase62(LOOKUP_LEN);
  const body = `${KEY_PREFIX}${lookup}_${randomBase62(SECRET_LEN)}`;
  const key = body + checksum(body);
  return { key, lookup, last4: key.slice(-4) };
}

/** The lookup id of a well-formed key whose checksum holds; null otherwise (no I/O needed). */
export function parseApiKey(candidate: string): string | null {
  if (candidate.length !== KEY_LENGTH) return null;
  const match = KEY_RE.exec(candidate);
  if (!match) return null;
  const body = candidate.slice(0, KEY_LENGTH - CHECKSUM_LEN);
  return checksum(body) === candidate.slice(KEY_LENGTH - CHECKSUM_LEN) ? match[1] : null;
}

export function looksLikeApiKey(token: string): boolean {
  return token.startsWith(KEY_PREFIX);
}

/** The only form in which a key is stored: HMAC-SHA-256 under API_KEY_SECRET. */
export function hashApiKey(secret: KeyObject, key: string): Buffer {
  return createHmac('sha256', secret).update(key).digest();
}

export function hashesEqual(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}
