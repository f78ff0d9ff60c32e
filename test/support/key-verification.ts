import { createSecretKey } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { ApiKeyStore, type KeyVerificationRow, type OutcomeCounts } from '../../src/auth/api-key-store.js';
import { hashApiKey, type GeneratedKey } from '../../src/auth/api-key-format.js';
import { ApiKeyVerifier } from '../../src/auth/api-key-verifier.js';
import { AuthMetrics } from '../../src/auth/auth-metrics.js';
import { LastUsedWriter } from '../../src/auth/last-used-writer.js';
import { VerificationOutcomeRecorder } from '../../src/auth/verification-outcome-recorder.js';
import type { Role } from '../../src/common/roles.js';
import type { OrgDirectory } from '../../src/directory/org-directory.js';
import { TypeOrmOrgDirectory } from '../../src/directory/typeorm-org-directory.js';
import { Settings } from '../../src/settings/settings.js';
import { TestClock } from './clock.js';
import { cacheOff, heldCache } from './verification-cache.js';

/* The API key verifier's unit fixture: the key table in memory, and a verifier over it. */

export const SECRET = 'unit-api-key-secret-0123456789abcdef-0123456789';
export const NOW = new Date('2030-01-15T12:00:00Z');
export const ORG = '11111111-1111-4111-8111-111111111111';

export const connectionRefused = () =>
  Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });

export function deferred<T>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** The key table as the verification statement sees it; each call records the lookups it was asked for. */
export class FakeKeyRows {
  readonly rows = new Map<string, KeyVerificationRow>();
  readonly calls: Array<{ lookups: string[]; withDirectory: boolean }> = [];
  /** When set, the next call waits for (or fails with) this instead of answering at once. */
  gate: Promise<void> | null = null;
  /** The verification outcomes written, batch by batch. */
  readonly outcomes: OutcomeCounts[][] = [];

  add(key: GeneratedKey, over: Partial<KeyVerificationRow> & { role?: Role | null } = {}): KeyVerificationRow {
    const userId = `00000000-0000-4000-8000-${String(this.rows.size + 1).padStart(12, '0')}`;
    const row: KeyVerificationRow = {
      id: `aaaaaaaa-0000-4000-8000-${String(this.rows.size + 1).padStart(12, '0')}`,
      lookup: key.lookup,
      keyHash: hashApiKey(createSecretKey(Buffer.from(SECRET)), key.key),
      previousLookup: null,
      previousKeyHash: null,
      previousExpiresAt: null,
      userId,
      orgId: ORG,
      scopes: ['decisions:read', 'decisions:write'],
      expiresAt: null,
      revokedAt: null,
      lastUsedAt: null,
      email: `${userId}@example.com`,
      role: 'owner',
      plan: 'free',
      memberCount: 3,
      usage: { asks: 0, retrieves: 0, imports: 0, captures: 0 },
      ...over,
    } as KeyVerificationRow;
    this.rows.set(key.lookup, row);
    if (row.previousLookup) this.rows.set(row.previousLookup, row);
    return row;
  }

  /** The key store over these rows: the verification statement, the outcomes kept, and other writes that do nothing. */
  readonly repository: ApiKeyStore = new InMemoryKeyStore(this);
}

class InMemoryKeyStore extends ApiKeyStore {
  constructor(private readonly table: FakeKeyRows) {
    super();
  }

  async findForVerification(
    lookups: string[],
    hashes: Buffer[],
    withDirectory: boolean,
  ): Promise<KeyVerificationRow[]> {
    const table = this.table;
    table.calls.push({ lookups: [...lookups], withDirectory });
    // As the statement: a row answers to its lookup with its hash, or its previous lookup with the previous hash.
    const matches = (r: KeyVerificationRow, l: string) =>
      hashes.some((h) => (r.lookup === l ? r.keyHash.equals(h) : !!r.previousKeyHash?.equals(h)));
    // The statement's snapshot is taken when it starts: later changes do not reach its answer.
    const answer = lookups.flatMap((l) =>
      table.rows.has(l) && matches(table.rows.get(l)!, l) ? [{ ...table.rows.get(l)! }] : [],
    );
    const gate = table.gate;
    table.gate = null;
    if (gate) await gate;
    return answer;
  }

  async touchLastUsed(): Promise<void> {}
  async recordScopeUse(): Promise<void> {}
  async recordOutcomes(counts: OutcomeCounts[]): Promise<void> {
    this.table.outcomes.push(counts);
  }
}

export function verifierOver(
  keys: FakeKeyRows,
  directory: OrgDirectory = new TypeOrmOrgDirectory({} as DataSource),
  cached = false,
) {
  const settings = new Settings({
    apiKeySecret: SECRET,
    session: { secret: 's'.repeat(32) },
    clock: new TestClock(NOW),
  });
  const metrics = new AuthMetrics();
  const held = cached ? heldCache(settings, metrics) : null;
  const outcomes = new VerificationOutcomeRecorder(keys.repository);
  const verifier = new ApiKeyVerifier(
    keys.repository,
    directory,
    settings,
    metrics,
    held?.cache ?? cacheOff(),
    outcomes,
    new LastUsedWriter(keys.repository),
  );
  return { verifier, metrics, outcomes, notify: (keyId: string) => held?.notify({ keyId, userId: null, orgId: null }) };
}

/** A key whose last character is changed: the checksum no longer holds. */
export function misChecksummed(key: string): string {
  return key.slice(0, -1) + (key.endsWith('A') ? 'B' : 'A');
}
