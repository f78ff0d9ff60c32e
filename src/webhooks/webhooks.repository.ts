import { Injectable } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import type { DataSource, EntityManager, QueryRunner, Repository } from 'typeorm';
import type { KeysetPosition } from '../common/pagination.js';
import { returnedRows } from '../database/transactions.js';
import { WebhookDeliveryEntity, WebhookEndpointEntity } from './webhook.entities.js';
import { EXPIRY_BATCH_SQL } from './webhook-expiry.sql.js';
import { storableText } from './webhook-records.js';

/** What pg-boss needs to run its statements inside one of our transactions (its `db` option). */
export interface SqlExecutor {
  executeSql(text: string, values?: unknown[]): Promise<{ rows: unknown[] }>;
}

export interface OutboxRow {
  id: string;
  orgId: string;
  type: string;
  data: Record<string, unknown>;
  createdAt: Date;
}

export interface RelayTarget {
  eventId: string;
  endpointId: string;
}

const executorOf = (runner: QueryRunner): SqlExecutor => ({
  executeSql: async (text, values) => ({ rows: (await runner.query(text, values, true)).records }),
});

@Injectable()
export class WebhooksRepository {
  constructor(
    @InjectRepository(WebhookEndpointEntity) private readonly endpoints: Repository<WebhookEndpointEntity>,
    @InjectRepository(WebhookDeliveryEntity) private readonly deliveries: Repository<WebhookDeliveryEntity>,
    @InjectDataSource() private readonly db: DataSource,
  ) {}

  /** The statements of a transaction, for pg-boss to insert a job into it (its `db` option). */
  executorIn(manager: EntityManager): SqlExecutor {
    return executorOf(manager.queryRunner!);
  }

  /** Writes take the manager of the transaction that also records their audit event. */
  createEndpoint(
    row: Omit<
      WebhookEndpointEntity,
      'id' | 'createdAt' | 'updatedAt' | 'failingSince' | 'previousSecretBox' | 'previousSecretExpiresAt'
    >,
    manager: EntityManager,
  ): Promise<WebhookEndpointEntity> {
    const repo = manager.getRepository(WebhookEndpointEntity);
    return repo.save(
      repo.create({ ...row, failingSince: null, previousSecretBox: null, previousSecretExpiresAt: null }),
    );
  }

  findEndpoint(orgId: string, id: string): Promise<WebhookEndpointEntity | null> {
    return this.endpoints.findOneBy({ orgId, id });
  }

  findEndpointById(id: string): Promise<WebhookEndpointEntity | null> {
    return this.endpoints.findOneBy({ id });
  }

  async listEndpoints(orgId: string, after: KeysetPosition | null, limit: number): Promise<WebhookEndpointEntity[]> {
    return this.endpoints
      .createQueryBuilder('w')
      .where('w.org_id = :orgId', { orgId })
      .andWhere(after ? '(w.created_at, w.id) < (:t, :i)' : 'TRUE', after ? { t: after.createdAt, i: after.id } : {})
      .orderBy('w.created_at', 'DESC')
      .addOrderBy('w.id', 'DESC')
      .limit(limit + 1)
      .getMany();
  }

  async updateEndpoint(
    orgId: string,
    id: string,
    patch: Partial<Pick<WebhookEndpointEntity, 'url' | 'eventTypes' | 'enabled' | 'description'>>,
    at: Date,
    manager: EntityManager,
  ): Promise<WebhookEndpointEntity | null> {
    const changes: Partial<WebhookEndpointEntity> = { ...patch, updatedAt: at };
    // Re-enabling (or pointing elsewhere) clears the failing mark: the owner has acted on it.
    if (patch.enabled === true || patch.url !== undefined) changes.failingSince = null;
    const repo = manager.getRepository(WebhookEndpointEntity);
    const result = await repo.update({ orgId, id }, changes);
    return result.affected ? repo.findOneBy({ orgId, id }) : null;
  }

  async deleteEndpoint(orgId: string, id: string, manager: EntityManager): Promise<boolean> {
    const result = await manager.delete(WebhookEndpointEntity, { orgId, id });
    if (!result.affected) return false;
    await manager.delete(WebhookDeliveryEntity, { endpointId: id });
    return true;
  }

  /** Marks an endpoint failing once (a later failure keeps the first time); true when it changed now. */
  async markFailing(id: string, at: Date, manager: EntityManager): Promise<boolean> {
    const result = await manager
      .getRepository(WebhookEndpointEntity)
      .createQueryBuilder()
      .update()
      .set({ failingSince: at })
      .where('id = :id AND failing_since IS NULL', { id })
      .execute();
    return (result.affected ?? 0) > 0;
  }

  /** Clears the secrets rotated out whose overlap is over (deliveries already ignore them). */
  async clearExpiredPreviousSecrets(now: Date): Promise<void> {
    await this.endpoints
      .createQueryBuilder()
      .update()
      .set({ previousSecretBox: null, previousSecretExpiresAt: null })
      .where('previous_secret_expires_at <= :now', { now })
      .execute();
  }

  /**
   * A new signing secret; the current one becomes the previous one until `previousUntil` (null: no
   * overlap, it stops signing now). A previous secret still in its overlap is dropped.
   */
  async rotateSecret(
    orgId: string,
    id: string,
    secretBox: Buffer,
    previousUntil: Date | null,
    at: Date,
    manager: EntityManager,
  ): Promise<WebhookEndpointEntity | null> {
    const rows = returnedRows<{ id: string }>(
      await manager.query(
        `UPDATE webhook_endpoints
          SET previous_secret_box = CASE WHEN $4::timestamptz IS NULL THEN NULL ELSE secret_box END,
              previous_secret_expires_at = $4, secret_box = $3, updated_at = $5
        WHERE org_id = $1 AND id = $2
        RETURNING id`,
        [orgId, id, secretBox, previousUntil, at],
      ),
    );
    return rows.length > 0 ? manager.getRepository(WebhookEndpointEntity).findOneBy({ orgId, id }) : null;
  }

  /**
   * Endpoints of an org, counted under a transaction-scoped lock on the org's endpoint list, so two
   * concurrent creations cannot both pass the cap: the second waits for the first to commit.
   */
  async lockAndCountEndpoints(orgId: string, manager: EntityManager): Promise<number> {
    await manager.query(`SELECT pg_advisory_xact_lock(hashtextextended('webhook_endpoints:' || $1::text, 0))`, [orgId]);
    // A statement of its own, after the lock: its snapshot includes what the previous holder committed.
    const rows: Array<{ n: number }> = await manager.query(
      `SELECT count(*)::int AS n FROM webhook_endpoints WHERE org_id = $1`,
      [orgId],
    );
    return rows[0].n;
  }

  async clearFailing(id: string): Promise<void> {
    await this.endpoints
      .createQueryBuilder()
      .update()
      .set({ failingSince: null })
      .where('id = :id AND failing_since IS NOT NULL', { id })
      .execute();
  }

  async recordAttempt(row: Omit<WebhookDeliveryEntity, 'id' | 'createdAt'>, at: Date): Promise<void> {
    await this.deliveries
      .createQueryBuilder()
      .insert()
      .values({ ...row, responseBody: storableText(row.responseBody), error: storableText(row.error), createdAt: at })
      .orIgnore()
      .execute();
  }

  async listDeliveries(
    endpointId: string,
    after: KeysetPosition | null,
    limit: number,
  ): Promise<WebhookDeliveryEntity[]> {
    return this.deliveries
      .createQueryBuilder('d')
      .where('d.endpoint_id = :endpointId', { endpointId })
      .andWhere(after ? '(d.created_at, d.id) < (:t, :i)' : 'TRUE', after ? { t: after.createdAt, i: after.id } : {})
      .orderBy('d.created_at', 'DESC')
      .addOrderBy('d.id', 'DESC')
      .limit(limit + 1)
      .getMany();
  }

  findDelivery(endpointId: string, id: string): Promise<WebhookDeliveryEntity | null> {
    return this.deliveries.findOneBy({ endpointId, id });
  }

  /** Deletes up to `limit` delivery attempts older than `before`; returns how many. */
  async pruneDeliveries(before: Date, limit: number): Promise<number> {
    const rows = returnedRows<unknown>(
      await this.db.query(
        `DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries WHERE created_at < $1 LIMIT $2) RETURNING id`,
        [before, limit],
      ),
    );
    return rows.length;
  }

  /** Threshold marks of past days are no longer needed to keep a day's notice single. */
  async pruneThresholdMarks(before: Date, limit: number): Promise<number> {
    const rows = returnedRows<unknown>(
      await this.db.query(
        `DELETE FROM event_marks WHERE (kind, subject, mark) IN (
         SELECT kind, subject, mark FROM event_marks WHERE kind = 'usage_threshold' AND created_at < $1 LIMIT $2) RETURNING mark`,
        [before, limit],
      ),
    );
    return rows.length;
  }

  /** Whether the outbox holds anything: the relay's idle poll, one cheap statement outside a transaction. */
  async outboxHasRows(): Promise<boolean> {
    const rows: unknown[] = await this.db.query(`SELECT 1 FROM event_outbox LIMIT 1`);
    return rows.length > 0;
  }

  /**
   * The relay, in one transaction: claims a batch of outbox rows (SKIP LOCKED, so relays on other
   * instances take other rows), finds the endpoints subscribed to each, lets `enqueue` insert the
   * delivery jobs through the same transaction, and deletes the rows. A crash anywhere before the
   * commit leaves the rows for the next relay; the commit makes jobs and deletion happen together.
   */
  async relayBatch(
    limit: number,
    enqueue: (events: OutboxRow[], targets: RelayTarget[], tx: SqlExecutor) => Promise<void>,
  ): Promise<number> {
    return this.db.transaction(async (m) => {
      const runner = m.queryRunner!;
      const claimed = (
        await runner.query(
          `SELECT id, org_id, type, data, created_at FROM event_outbox ORDER BY created_at, id LIMIT $1 FOR UPDATE SKIP LOCKED`,
          [limit],
          true,
        )
      ).records as Array<{ id: string; org_id: string; type: string; data: Record<string, unknown>; created_at: Date }>;
      if (claimed.length === 0) return 0;
      const events = claimed.map((r) => ({
        id: r.id,
        orgId: r.org_id,
        type: r.type,
        data: r.data,
        createdAt: r.created_at,
      }));
      const targets = (
        await runner.query(
          `SELECT e.id AS event_id, w.id AS endpoint_id
           FROM unnest($1::uuid[], $2::uuid[], $3::text[]) AS e(id, org_id, type)
           JOIN webhook_endpoints w ON w.org_id = e.org_id AND w.enabled AND e.type = ANY(w.event_types)`,
          [events.map((e) => e.id), events.map((e) => e.orgId), events.map((e) => e.type)],
          true,
        )
      ).records as Array<{ event_id: string; endpoint_id: string }>;
      await enqueue(
        events,
        targets.map((t) => ({ eventId: t.event_id, endpointId: t.endpoint_id })),
        executorOf(runner),
      );
      await runner.query(`DELETE FROM event_outbox WHERE id = ANY($1::uuid[])`, [events.map((e) => e.id)]);
      return events.length;
    });
  }

  /** One window of the expiry scan (EXPIRY_BATCH_SQL); `warnBeforeMs` null: keys that have expired. */
  async emitExpiryBatch(
    now: Date,
    warnBeforeMs: number | null,
    notBeforeMs: number,
    mark: string,
    type: 'api_key.expiring' | 'api_key.expired',
    limit: number,
  ): Promise<number> {
    const horizon = new Date(now.getTime() + (warnBeforeMs ?? 0));
    const floor = new Date(now.getTime() + notBeforeMs);
    const rows: unknown[] = await this.db.query(EXPIRY_BATCH_SQL, [
      horizon,
      warnBeforeMs === null,
      now,
      mark,
      limit,
      type,
      floor,
    ]);
    return rows.length;
  }
}
