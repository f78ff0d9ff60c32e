import { createCipheriv, createDecipheriv, hkdfSync, randomBytes, type KeyObject } from 'node:crypto';

/**
 * Webhook signing secrets must be usable for signing, so they cannot be hashed like API keys.
 * They are stored sealed with AES-256-GCM under a key derived (HKDF-SHA-256) from API_KEY_SECRET,
 * which never reaches the database: a dump alone yields no signing secret.
 * Layout: 1 version byte | 12-byte IV | 16-byte tag | ciphertext.
 */
const VERSION = 1;

export class SecretBox {
  private readonly key: Buffer;

  constructor(apiKeySecret: KeyObject) {
    this.key = Buffer.from(hkdfSync('sha256', apiKeySecret.export(), 'kui-webhook-secrets', 'aes-256-gcm v1', 32));
  }

  seal(plain: string): Buffer {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return Buffer.concat([Buffer.from([VERSION]), iv, cipher.getAuthTag(), body]);
  }

  open(sealed: Buffer): string {
    if (sealed[0] !== VERSION) throw new Error('unknown secret box version');
    const decipher = createDecipheriv('aes-256-gcm', this.key, sealed.subarray(1, 13));
    decipher.setAuthTag(sealed.subarray(13, 29));
    return Buffer.concat([decipher.update(sealed.subarray(29)), decipher.final()]).toString('utf8');
  }
}

/** A Standard Webhooks secret: `whsec_` + base64 of 32 random bytes. */
export function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}
