import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { returnedRows } from '../database/transactions.js';

export interface OrgVersionRow {
  id: string;
  name: string;
  plan: string;
  api_version: string;
  previous_version: string;
}

/** The org's pinned API version (orgs.api_version, migration 1765500000000). */
@Injectable()
export class OrgVersionRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** The org's pin, or null when the org does not exist. */
  async pinOf(orgId: string): Promise<string | null> {
    const rows: Array<{ api_version: string }> = await this.db.query(`SELECT api_version FROM orgs WHERE id = $1`, [
      orgId,
    ]);
    return rows[0]?.api_version ?? null;
  }

  /** Pins the org to `version`; null when the org does not exist. */
  async setPin(orgId: string, version: string, manager?: EntityManager): Promise<OrgVersionRow | null> {
    const result: unknown = await (manager ?? this.db.manager).query(
      `UPDATE orgs o SET api_version = $2
         FROM (SELECT id, api_version AS previous_version FROM orgs WHERE id = $1 FOR UPDATE) old
        WHERE o.id = old.id
        RETURNING o.id, o.name, o.plan, o.api_version, old.previous_version`,
      [orgId, version],
    );
    return returnedRows<OrgVersionRow>(result)[0] ?? null;
  }
}
