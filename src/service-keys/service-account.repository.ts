import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';

/**
 * The reserved address of an org's service account: one per org, under the `.invalid` top-level
 * domain (RFC 2606), so it is a valid e-mail string that can never receive mail. The unique
 * e-mail index makes "one account per org" hold under concurrent first mints.
 */
export const SERVICE_ACCOUNT_DOMAIN = 'service-accounts.invalid';
export const serviceAccountEmail = (orgId: string): string => `svc-${orgId.toLowerCase()}@${SERVICE_ACCOUNT_DOMAIN}`;

/** The service account's membership role: the org's highest, so its keys' live ceiling is the org's own. */
export const SERVICE_ACCOUNT_ROLE = 'owner';

/**
 * An org's service account: a user of kind `service` with a membership of the org (role
 * SERVICE_ACCOUNT_ROLE). It holds the org's service keys, never signs in and is not counted
 * among the org's people.
 */
@Injectable()
export class ServiceAccountRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** The org's service account id, or null when it has none yet. */
  async find(orgId: string): Promise<string | null> {
    const rows: Array<{ id: string }> = await this.db.query(
      `SELECT id FROM users WHERE email = $1 AND kind = 'service'`,
      [serviceAccountEmail(orgId)],
    );
    return rows[0]?.id ?? null;
  }

  /**
   * The org's service account and its membership, created on the org's first service key (both
   * idempotent: a concurrent first mint finds the other's row). Null when a person holds the
   * reserved address (created by hand): such an org cannot hold service keys.
   */
  ensure(orgId: string): Promise<string | null> {
    const email = serviceAccountEmail(orgId);
    return this.db.transaction(async (m) => {
      await m.query(`INSERT INTO users (email, kind) VALUES ($1, 'service') ON CONFLICT DO NOTHING`, [email]);
      // A new statement: it sees a row a concurrent first mint committed while this one waited.
      const [user] = await m.query<Array<{ id: string; kind: string }>>(`SELECT id, kind FROM users WHERE email = $1`, [
        email,
      ]);
      if (user.kind !== 'service') return null;
      await m.query(
        `INSERT INTO memberships (org_id, user_id, role) VALUES ($1, $2, $3)
         ON CONFLICT (org_id, user_id) DO UPDATE SET role = EXCLUDED.role WHERE memberships.role <> EXCLUDED.role`,
        [orgId, user.id, SERVICE_ACCOUNT_ROLE],
      );
      return user.id;
    });
  }
}
