import { PrimaryColumn } from 'typeorm';

/**
 * The key every usage table starts with: one org, one UTC day. TypeORM puts a base class's
 * columns first, so each table's key keeps its column order.
 */
export abstract class OrgDayColumns {
  @PrimaryColumn({ name: 'org_id', type: 'uuid' })
  orgId: string;

  @PrimaryColumn({ type: 'date' })
  day: string;
}

/**
 * The key of an attribution table: an org's day split by the credential that charged it, an API
 * key (its id), a session (its user's id) or the system (host code and the operator CLI: the nil UUID).
 */
export abstract class CredentialDayColumns extends OrgDayColumns {
  @PrimaryColumn({ name: 'credential_kind', type: 'text' })
  credentialKind: 'api_key' | 'session' | 'system';

  @PrimaryColumn({ name: 'credential_id', type: 'uuid' })
  credentialId: string;
}
