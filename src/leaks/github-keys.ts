import { createPublicKey, verify, type KeyObject } from 'node:crypto';

/**
 * GitHub's secret scanning partner program signs each alert with ECDSA P-256 over SHA-256 of the
 * raw request body; `Github-Public-Key-Identifier` names the key. The keys are configured as GitHub
 * publishes them (https://api.github.com/meta/public_keys/secret_scanning): a JSON list of
 * `{ key_identifier, key }`, or that endpoint's whole `{ public_keys: [...] }` body.
 */
export class GithubScanningKeys {
  private readonly keys = new Map<string, KeyObject>();

  constructor(json: string | undefined) {
    if (!json) return;
    const parsed = JSON.parse(json) as unknown;
    const list = Array.isArray(parsed) ? parsed : (parsed as { public_keys?: unknown }).public_keys;
    if (!Array.isArray(list)) throw new Error('expected a JSON list of {key_identifier, key}');
    for (const entry of list as Array<{ key_identifier?: unknown; key?: unknown }>) {
      if (typeof entry?.key_identifier !== 'string' || typeof entry.key !== 'string')
        throw new Error('every entry needs key_identifier and key (PEM)');
      const key = createPublicKey(entry.key);
      if (key.asymmetricKeyType !== 'ec') throw new Error(`key ${entry.key_identifier} is not an EC public key`);
      this.keys.set(entry.key_identifier, key);
    }
  }

  get configured(): boolean {
    return this.keys.size > 0;
  }

  /** Whether `signature` (base64, DER) over the raw body verifies with the key named by `identifier`. */
  verify(rawBody: Buffer, identifier: string | undefined, signature: string | undefined): boolean {
    if (!identifier || !signature) return false;
    const key = this.keys.get(identifier);
    if (!key) return false;
    try {
      return verify('sha256', rawBody, key, Buffer.from(signature, 'base64'));
    } catch {
      return false;
    }
  }
}

export const GITHUB_SCANNING_KEYS = Symbol('GITHUB_SCANNING_KEYS');
