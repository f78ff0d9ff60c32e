import { createHmac, createSecretKey, randomUUID } from 'node:crypto';
import jwt from 'jsonwebtoken';
import type pg from 'pg';
import { awaitInvalidationsAcknowledged } from '../../src/coherence/verification-invalidation.js';
import type { Plan, Role } from '../../src/common/roles.js';

export const TEST_SESSION_SECRET = 'test-session-secret-0123456789abcdef-0123456789';
export const TEST_API_KEY_SECRET = 'test-api-key-secret-0123456789abcdef-0123456789';

export interface SessionOptions {
  orgId?: string;
  ttlSeconds?: number;
  secret?: string;
  claims?: Record<string, unknown>;
  email?: string;
}

/** JSON text given as is in a hand-signed token, for values `JSON.stringify` cannot write (`1e400`). */
export class JsonText {
  constructor(readonly text: string) {}
}

/** One part of a JWT: the JSON of `value` (or its exact text), base64url. */
export const jwtPart = (value: unknown): string =>
  Buffer.from(value instanceof JsonText ? value.text : (JSON.stringify(value) ?? 'null')).toString('base64url');

/**
 * A JWT over any header and payload, HS256-signed by hand (by default with the test session
 * secret): for tokens a JWT library refuses to write (odd headers, claims of any type).
 */
export function handSignedJwt(
  header: unknown,
  payload: unknown,
  secret: string | Buffer = TEST_SESSION_SECRET,
): string {
  const data = `${jwtPart(header)}.${jwtPart(payload)}`;
  return `${data}.${createHmac('sha256', secret).update(data).digest('base64url')}`;
}

/** Seeds directory rows straight into a test database and signs sessions as an identity provider would. */
export class Seeder {
  constructor(
    private readonly pool: pg.Pool,
    private readonly sessionSecret = TEST_SESSION_SECRET,
  ) {}

  async org(plan: Plan = 'free', name = 'Org'): Promise<string> {
    const { rows } = await this.pool.query<{ id: string }>(
      `INSERT INTO orgs (name, plan) VALUES ($1, $2) RETURNING id`,
      [name, plan],
    );
    return rows[0].id;
  }

  async user(email = `u-${randomUUID()}@example.com`): Promise<{ id: string; email: string }> {
    const { rows } = await this.pool.query<{ id: string }>(`INSERT INTO users (email) VALUES ($1) RETURNING id`, [
      email,
    ]);
    return { id: rows[0].id, email };
  }

  /** Adds (or changes the role of) a member; `joinedAt` pins the membership's time (default now()). */
  async member(orgId: string, userId: string, role: Role, joinedAt?: Date): Promise<void> {
    await this.pool.query(
      `INSERT INTO memberships (org_id, user_id, role, created_at) VALUES ($1, $2, $3, COALESCE($4, now()))
       ON CONFLICT (org_id, user_id) DO UPDATE SET role = EXCLUDED.role`,
      [orgId, userId, role, joinedAt ?? null],
    );
    await this.acknowledged();
  }

  async removeMember(orgId: string, userId: string): Promise<void> {
    await this.pool.query(`DELETE FROM memberships WHERE org_id = $1 AND user_id = $2`, [orgId, userId]);
    await this.acknowledged();
  }

  /**
   * Returns once every instance with a verification cache has applied the changes committed so
   * far, as the service's own writes do (the triggers notified them at commit).
   */
  async acknowledged(): Promise<void> {
    await awaitInvalidationsAcknowledged((sql, params) => this.pool.query(sql, params).then((r) => r.rows), 30_000);
  }

  async workspace(orgId: string, userId: string): Promise<void> {
    await this.pool.query(`INSERT INTO workspaces (org_id, user_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`, [
      orgId,
      userId,
    ]);
  }

  session(userId: string, email: string, options: SessionOptions = {}): string {
    const claims: Record<string, unknown> = { email: options.email ?? email, ...options.claims };
    if (options.orgId) claims.org_id = options.orgId;
    return jwt.sign(claims, createSecretKey(Buffer.from(options.secret ?? this.sessionSecret)), {
      algorithm: 'HS256',
      subject: userId,
      expiresIn: options.ttlSeconds ?? 3600,
    });
  }

  /** The org's audit events as stored, oldest first (raw rows, for assertions). */
  async auditEvents(orgId: string): Promise<Array<Record<string, any>>> {
    const { rows } = await this.pool.query(`SELECT * FROM audit_events WHERE org_id = $1 ORDER BY created_at, id`, [
      orgId,
    ]);
    return rows;
  }

  /** Another member of `orgId` with `role`, a workspace there, and a session. */
  async colleague(orgId: string, role: Role, joinedAt?: Date) {
    const user = await this.user();
    await this.member(orgId, user.id, role, joinedAt);
    await this.workspace(orgId, user.id);
    return { orgId, userId: user.id, email: user.email, session: this.session(user.id, user.email) };
  }

  /** An org with one member of `role` who has connected a repository, and that member's session. */
  async world(role: Role = 'owner', plan: Plan = 'free') {
    const orgId = await this.org(plan);
    const user = await this.user();
    await this.member(orgId, user.id, role);
    await this.workspace(orgId, user.id);
    return { orgId, userId: user.id, email: user.email, session: this.session(user.id, user.email) };
  }
}
