import type { Counters } from '../common/meters.js';
import type { Plan, Role } from '../common/roles.js';
import type { KeyLimits } from '../common/key-limits.js';

/** A key row as verification needs it, with its owner's standing in the key's org. */
export interface KeyVerificationRow {
  id: string;
  lookup: string;
  keyHash: Buffer;
  /** Rotation: the replaced secret, which verifies until `previousExpiresAt`; all three null once that has passed (the store returns no lapsed secret). */
  previousLookup: string | null;
  previousKeyHash: Buffer | null;
  previousExpiresAt: Date | null;
  userId: string;
  orgId: string;
  scopes: string[];
  expiresAt: Date | null;
  revokedAt: Date | null;
  lastUsedAt: Date | null;
  /** A disabled key is refused like a revoked one (absent: enabled). */
  enabled?: boolean;
  /** Awaiting an admin's approval under the org's key policy: refused, never cached (absent: approved). */
  pending?: boolean;
  /** Its limits as enforcement needs them (absent or null: none set); its metadata for host code. */
  limits?: KeyLimits | null;
  metadata?: Record<string, unknown> | null;
  /** Owner standing: null when the owner is no longer a member of the key's org. */
  email: string | null;
  role: Role | null;
  plan: Plan | null;
  memberCount: number;
  /** The owner is a service account (a service key); false with a host's directory. */
  service?: boolean;
  /** The key's org's meters on the day the batch was verified for (zeros when nothing was charged). */
  usage: Counters;
}

/** Requests of one key on routes that required one scope, on one UTC day (ScopeUsageRecorder). */
export interface ScopeUse {
  keyId: string;
  scope: string;
  /** YYYY-MM-DD, UTC. */
  day: string;
  requests: number;
  lastUsedAt: Date;
}

/** One key's verification outcomes in one UTC hour (VerificationOutcomeRecorder). */
export interface OutcomeCounts {
  keyId: string;
  /** The hour's start. */
  hour: Date;
  /** Requests per outcome, in VERIFICATION_OUTCOMES order. */
  counts: readonly number[];
}

/**
 * What auth needs from the api_keys table: the verification read (a key by its lookup and keyed
 * hash, or by its previous lookup and hash only during the rotation's grace) and the write-behinds
 * of last use, scope use and verification outcomes. A lookup whose hash is not among `hashes` reads no row: a wrong secret costs what
 * an unknown lookup costs.
 * A port: auth (below the features) declares it, api-keys' ApiKeyRepository implements it, and
 * the root module (core/) binds the one to the other, so auth never imports the api-keys feature.
 */
export abstract class ApiKeyStore {
  abstract findForVerification(
    lookups: string[],
    hashes: Buffer[],
    withDirectory: boolean,
    day: string,
  ): Promise<KeyVerificationRow[]>;
  abstract touchLastUsed(ids: string[], at: Date[]): Promise<void>;
  /** Adds the counts to the keys' scope use (keys gone since are skipped); one statement. */
  abstract recordScopeUse(uses: ScopeUse[]): Promise<void>;
  /** Adds the counts to the keys' hourly and daily outcomes (keys gone since are skipped); one statement. */
  abstract recordOutcomes(counts: OutcomeCounts[]): Promise<void>;
}
