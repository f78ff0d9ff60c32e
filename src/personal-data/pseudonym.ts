import { createHmac, hkdfSync, type KeyObject } from 'node:crypto';

/**
 * The stable keyed hash that stands for an erased person in the audit log: HMAC-SHA-256 of their
 * id under a key derived (HKDF-SHA-256) from API_KEY_SECRET, shaped as a UUID (version 8, RFC 9562)
 * so it fits the log's id columns and its `actor_id` filter. The same person always gets the same
 * pseudonym (an auditor can still group their events); without API_KEY_SECRET nobody can compute
 * it from an id. Changing API_KEY_SECRET gives later erasures other pseudonyms.
 */
export class Pseudonyms {
  private readonly key: Buffer;

  constructor(apiKeySecret: KeyObject) {
    this.key = Buffer.from(hkdfSync('sha256', apiKeySecret.export(), 'kui-audit-pseudonyms', 'hmac-sha-256 v1', 32));
  }

  of(userId: string): string {
    const b = createHmac('sha256', this.key).update(userId.toLowerCase()).digest().subarray(0, 16);
    b[6] = (b[6] & 0x0f) | 0x80; // version 8
    b[8] = (b[8] & 0x3f) | 0x80; // variant 10
    const h = b.toString('hex');
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  }
}

/** The address an erased user's e-mail is replaced with: unique (their id), and under `.invalid`, which never receives mail. */
export function tombstoneEmail(userId: string): string {
  return `erased-${userId.toLowerCase()}@erased.invalid`;
}
