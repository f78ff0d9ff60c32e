import { crc32 } from 'node:zlib';
import { generateApiKey } from '../../src/auth/api-key-format.js';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** A well-formed key around `body` (prefix, lookup, `_`, secret): the format's CRC32 checksum, in base62. */
export function withChecksum(body: string): string {
  let n = crc32(body);
  let out = '';
  for (let i = 0; i < 6; i++) {
    out = ALPHABET[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return body + out;
}

/** A well-formed key (checksum and all) under `key`'s lookup id with another secret: what a guesser who knows the id sends. */
export function wrongSecretFor(key: string): string {
  return withChecksum(key.slice(0, 22) + generateApiKey().key.slice(22, 54));
}
