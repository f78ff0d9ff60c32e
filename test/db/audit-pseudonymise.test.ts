import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { serviceRoleWorld } from '../support/database.js';

const APPEND_ONLY = /append-only/;
const NOT_ALLOWED = /permission denied|must be owner/;

/**
 * A person's erasure rewrites their audit events through `audit_pseudonymise`, run by the service's
 * own role; the log still refuses every other UPDATE, by that role and by the owner.
 */
describe('audit_pseudonymise under the service role', () => {
  const w = serviceRoleWorld('pseud');

  /** An event appended by the w.service itself. */
  async function event(fields: {
    actor?: string | null;
    target?: string;
    details?: object;
    action?: string;
  }): Promise<string> {
    const { rows } = await w.service.query<{ id: string }>(
      `INSERT INTO audit_events (created_at, org_id, action, actor_type, actor_id, credential_type, target_type, target_id, client_address, user_agent, details)
       VALUES (now(), $1, $2, $3, $4, 'session', 'user', $5, '203.0.113.9', 'Firefox/140', $6) RETURNING id`,
      [
        w.orgId,
        fields.action ?? 'member.added',
        fields.actor ? 'user' : 'operator',
        fields.actor ?? null,
        fields.target ?? randomUUID(),
        JSON.stringify(fields.details ?? {}),
      ],
    );
    return rows[0].id;
  }
  const row = async (id: string) => (await w.db.pool.query(`SELECT * FROM audit_events WHERE id = $1`, [id])).rows[0];
  const pseudonymise = async (subject: string, pseudonym: string, email: string) =>
    (await w.service.query<{ n: number }>(`SELECT audit_pseudonymise($1, $2, $3) AS n`, [subject, pseudonym, email]))
      .rows[0].n;

  it("rewrites the subject's id as actor, as target and inside details, their e-mail in any case, and clears the address and browser of their own events, in those rows only", async () => {
    const [subject, pseudonym, other] = [randomUUID(), randomUUID(), randomUUID()];
    const email = 'Ada.Lovelace+x@Example.com';
    const asActor = await event({ actor: subject, details: { name: 'mine' } });
    const asTarget = await event({ actor: other, target: subject, details: { role: 'member' } });
    const inDetails = await event({
      actor: other,
      details: { owner_id: subject, note: `ask ${email.toUpperCase()} or "ada.lovelace+x@example.com"` },
    });
    const unrelated = await event({
      actor: other,
      details: { note: 'adaXlovelace+x@example.com', email: 'someone@example.com' },
    });
    const before = await row(unrelated);

    expect(await pseudonymise(subject, pseudonym, email)).toBe(3);
    expect(await row(asActor)).toMatchObject({
      actor_id: pseudonym,
      actor_type: 'user',
      credential_type: 'session',
      client_address: null,
      user_agent: null,
      details: { name: 'mine' },
    });
    // Where the subject is only the target, the address and browser are the actor's: kept.
    expect(await row(asTarget)).toMatchObject({
      actor_id: other,
      target_id: pseudonym,
      client_address: '203.0.113.9',
      user_agent: 'Firefox/140',
      details: { role: 'member' },
    });
    expect(await row(inDetails)).toMatchObject({
      actor_id: other,
      details: { owner_id: pseudonym, note: 'ask [erased] or "[erased]"' },
    });
    // A look-alike address (the dot is not a wildcard) and other people's rows are untouched.
    expect(await row(unrelated)).toEqual(before);
    // Idempotent: nothing left to rewrite.
    expect(await pseudonymise(subject, pseudonym, email)).toBe(0);
    const { rows } = await w.db.pool.query(
      `SELECT count(*)::int AS n FROM audit_events WHERE actor_id = $1 OR target_id = $1 OR details::text ILIKE '%ada.lovelace%'`,
      [subject],
    );
    expect(rows[0].n).toBe(0);
  });

  it('matches the e-mail at e-mail boundaries only: other people’s addresses that contain it are left alone', async () => {
    const [subject, pseudonym, other] = [randomUUID(), randomUUID(), randomUUID()];
    const lookAlikes = {
      longer_local: 'joann@example.com',
      dotted_local: 'jo.ann@example.com',
      plus_local: 'x+ann@example.com',
      longer_domain: 'ann@example.com.au',
      hyphen_domain: 'ann@example.com-mail.net',
      longer_tld: 'ann@example.community',
    };
    const theirs = await event({ actor: other, details: lookAlikes });
    const before = await row(theirs);
    const hers = await event({
      actor: other,
      details: {
        plain: 'ann@example.com',
        cased: 'mail ANN@Example.COM, please',
        mailto: 'mailto:ann@example.com',
        after_newline: 'first line\nann@example.com.',
        quoted: '"ann@example.com"',
        beside: 'joann@example.com and ann@example.com',
      },
    });

    expect(await pseudonymise(subject, pseudonym, 'ann@example.com')).toBe(1);
    expect(await row(theirs)).toEqual(before);
    expect((await row(hers)).details).toEqual({
      plain: '[erased]',
      cased: 'mail [erased], please',
      mailto: 'mailto:[erased]',
      after_newline: 'first line\n[erased].',
      quoted: '"[erased]"',
      beside: 'joann@example.com and [erased]',
    });
  });

  it('refuses a missing argument or a pseudonym equal to the subject', async () => {
    const subject = randomUUID();
    await expect(w.service.query(`SELECT audit_pseudonymise($1, $1, 'a@b.c')`, [subject])).rejects.toThrow(
      /must be given/,
    );
    await expect(w.service.query(`SELECT audit_pseudonymise($1, NULL, 'a@b.c')`, [subject])).rejects.toThrow(
      /must be given/,
    );
    await expect(w.service.query(`SELECT audit_pseudonymise($1, $2, NULL)`, [subject, randomUUID()])).rejects.toThrow(
      /must be given/,
    );
  });

  it('leaves the w.service role no other UPDATE: not directly, not with the mark set, not by replacing the function', async () => {
    const subject = randomUUID();
    const id = await event({ actor: subject });
    const mark = `${subject}:${randomUUID()}`;
    const attempts = [
      `UPDATE audit_events SET actor_id = gen_random_uuid() WHERE id = '${id}'`,
      `BEGIN; SELECT set_config('kui.audit_pseudonymise', '${mark}', true); UPDATE audit_events SET actor_id = '${mark.split(':')[1]}' WHERE id = '${id}'; COMMIT`,
      `CREATE OR REPLACE FUNCTION audit_pseudonymise(uuid, uuid, text) RETURNS integer LANGUAGE sql AS $$ SELECT 0 $$`,
      `ALTER FUNCTION audit_pseudonymise(uuid, uuid, text) SECURITY INVOKER`,
    ];
    for (const sql of attempts) {
      const client = await w.service.connect();
      try {
        await expect(client.query(sql), sql).rejects.toThrow(NOT_ALLOWED);
        await client.query('ROLLBACK').catch(() => undefined);
      } finally {
        client.release(true);
      }
    }
    expect((await row(id)).actor_id).toBe(subject);
  });

  it('still refuses the w.service role every UPDATE when granted UPDATE by mistake, the mark set or not', async () => {
    const subject = randomUUID();
    const id = await event({ actor: subject });
    await w.db.pool.query(`GRANT UPDATE ON audit_events TO ${w.role}`);
    try {
      await expect(w.service.query(`UPDATE audit_events SET details = '{}' WHERE id = $1`, [id])).rejects.toThrow(
        APPEND_ONLY,
      );
      const pseudonym = randomUUID();
      await expect(
        w.service.query(
          `SELECT set_config('kui.audit_pseudonymise', '${subject}:${pseudonym}', false); UPDATE audit_events SET actor_id = '${pseudonym}' WHERE id = '${id}'`,
        ),
      ).rejects.toThrow(APPEND_ONLY);
    } finally {
      await w.db.pool.query(`REVOKE UPDATE ON audit_events FROM ${w.role}`);
    }
    expect((await row(id)).actor_id).toBe(subject);
  });

  it('refuses the w.owner an UPDATE without the mark, and with it any change beyond the rewrite', async () => {
    const subject = randomUUID();
    const pseudonym = randomUUID();
    const id = await event({ actor: subject });
    await expect(
      w.db.pool.query(`UPDATE audit_events SET actor_id = $2 WHERE id = $1`, [id, pseudonym]),
    ).rejects.toThrow(APPEND_ONLY);
    const client = await w.db.pool.connect();
    try {
      for (const change of [
        `action = 'api_key.revoked'`,
        `actor_id = gen_random_uuid()`,
        `created_at = now() - interval '1 year'`,
        `client_address = '198.51.100.1'`,
        `user_agent = 'curl/8'`,
        `org_id = gen_random_uuid()`,
      ]) {
        await client.query('BEGIN');
        await client.query(`SELECT set_config('kui.audit_pseudonymise', $1, true)`, [`${subject}:${pseudonym}`]);
        await expect(client.query(`UPDATE audit_events SET ${change} WHERE id = $1`, [id]), change).rejects.toThrow(
          APPEND_ONLY,
        );
        await client.query('ROLLBACK');
      }
    } finally {
      client.release();
    }
    await expect(w.db.pool.query(`DELETE FROM audit_events WHERE id = $1`, [id])).rejects.toThrow(APPEND_ONLY);
    expect((await row(id)).actor_id).toBe(subject);
  });

  it('lets the address and browser be cleared under the mark only on the subject’s own events', async () => {
    const subject = randomUUID();
    const pseudonym = randomUUID();
    const theirs = await event({ actor: randomUUID(), target: subject });
    const client = await w.db.pool.connect();
    try {
      for (const change of [`client_address = NULL`, `user_agent = NULL`]) {
        await client.query('BEGIN');
        await client.query(`SELECT set_config('kui.audit_pseudonymise', $1, true)`, [`${subject}:${pseudonym}`]);
        await expect(client.query(`UPDATE audit_events SET ${change} WHERE id = $1`, [theirs]), change).rejects.toThrow(
          APPEND_ONLY,
        );
        await client.query('ROLLBACK');
      }
    } finally {
      client.release();
    }
    expect(await row(theirs)).toMatchObject({ client_address: '203.0.113.9', user_agent: 'Firefox/140' });
  });
});
