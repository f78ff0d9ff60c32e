import { createHmac } from 'node:crypto';
import { Logger, type LoggerService } from '@nestjs/common';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { LastUsedWriter } from '../../src/auth/last-used-writer.js';
import { TEST_API_KEY_SECRET, TEST_SESSION_SECRET } from '../support/seed.js';
import { startTestApp, type TestApp, type TestAppOptions } from '../support/test-app.js';
import { BEHIND_THE_RESPONSE, listKeys, mintOk, READ, secretPart, WRITE } from './api-keys.fixtures.js';

/** Every encoding in which a string could plausibly end up in a text dump or a log line. */
function encodings(secret: string): string[] {
  const bytes = Buffer.from(secret, 'utf8');
  return [secret, bytes.toString('hex'), bytes.toString('base64'), bytes.toString('base64url')];
}

function expectNoneOf(haystack: string, secrets: Record<string, string>): void {
  for (const [what, secret] of Object.entries(secrets)) {
    for (const encoded of encodings(secret)) {
      expect(haystack.includes(encoded), `${what} (${encoded.slice(0, 12)}…) found`).toBe(false);
    }
  }
}

describe('keys under load and at rest', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => t?.close());

  it('mints 50 keys at once with 50 distinct ids, lookups and keys, each of which works', async () => {
    const w = await t.seed.world('owner');
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => t.api.post('/api-keys', w.session, { org_id: w.orgId, name: `k${i}` })),
    );
    expect(results.map((r) => r.status)).toEqual(Array(50).fill(201));
    const bodies = results.map((r) => r.body);
    expect(new Set(bodies.map((b) => b.id)).size).toBe(50);
    expect(new Set(bodies.map((b) => b.lookup)).size).toBe(50);
    expect(new Set(bodies.map((b) => b.key)).size).toBe(50);
    expect((await listKeys(t, w.session)).map((k) => k.id).sort()).toEqual(bodies.map((b) => b.id).sort());

    const uses = await Promise.all(bodies.map((b) => t.api.get('/me', b.key)));
    expect(uses.map((r) => r.status)).toEqual(Array(50).fill(200));
  });

  it('keeps neither a key nor its secret part anywhere in the database, in any column of any table', async () => {
    const w = await t.seed.world('owner');
    const kept = await mintOk(t, w.session, {
      org_id: w.orgId,
      name: 'kept',
      scopes: [READ, WRITE],
      expires_in_days: 30,
    });
    const revoked = await mintOk(t, w.session, { org_id: w.orgId, name: 'revoked' });
    expect((await t.api.get('/me', kept.key)).status).toBe(200);
    expect((await t.api.get('/usage', kept.key)).status).toBe(200);
    expect((await t.api.get('/me', revoked.key)).status).toBe(200);
    await expect
      .poll(async () => (await listKeys(t, w.session)).every((k) => k.last_used_at), BEHIND_THE_RESPONSE)
      .toBe(true);
    expect((await t.api.delete(`/api-keys/${revoked.id}`, w.session)).status).toBe(204);
    await t.app.get(LastUsedWriter).flush();

    const dump = await dumpEveryTable(t);
    // The dump does see the key rows: their public parts are there, only the secrets are not.
    expect(dump).toContain(kept.lookup);
    expect(dump).toContain(revoked.lookup);
    expectNoneOf(dump, {
      'kept key': kept.key,
      'kept secret part': secretPart(kept.key, kept.lookup),
      'revoked key': revoked.key,
      'revoked secret part': secretPart(revoked.key, revoked.lookup),
      API_KEY_SECRET: TEST_API_KEY_SECRET,
      'session JWT': w.session,
    });
  });
});

describe('what is stored for a key', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => t?.close());

  it('is an HMAC-SHA-256 of the whole key under API_KEY_SECRET, beside the public lookup and last4', async () => {
    const w = await t.seed.world('owner');
    const minted = await mintOk(t, w.session, { org_id: w.orgId });
    const { rows } = await t.db.pool.query<{ lookup: string; last4: string; key_hash: Buffer }>(
      `SELECT lookup, last4, key_hash FROM api_keys WHERE id = $1`,
      [minted.id],
    );
    expect(rows).toHaveLength(1);
    expect(rows[0].lookup).toBe(minted.lookup);
    expect(rows[0].last4).toBe(minted.last4);
    expect(rows[0].key_hash.equals(createHmac('sha256', TEST_API_KEY_SECRET).update(minted.key).digest())).toBe(true);
  });
});

/** Every column of every row of every table outside the system schemas, cast to text. */
async function dumpEveryTable(t: TestApp): Promise<string> {
  const { rows: columns } = await t.db.pool.query<{ schema: string; table: string; column: string }>(
    `SELECT c.table_schema AS schema, c.table_name AS table, c.column_name AS column
       FROM information_schema.columns c
       JOIN information_schema.tables tb ON tb.table_schema = c.table_schema AND tb.table_name = c.table_name
      WHERE tb.table_type = 'BASE TABLE' AND c.table_schema NOT IN ('pg_catalog', 'information_schema')
      ORDER BY 1, 2, c.ordinal_position`,
  );
  const tables = new Map<string, string[]>();
  for (const c of columns) {
    const name = `"${c.schema}"."${c.table}"`;
    tables.set(name, [...(tables.get(name) ?? []), c.column]);
  }
  expect([...tables.keys()]).toContain('"public"."api_keys"');
  const lines: string[] = [];
  for (const [table, cols] of tables) {
    const select = cols.map((c) => `"${c}"::text`).join(', ');
    const { rows } = await t.db.pool.query({ text: `SELECT ${select} FROM ${table}`, rowMode: 'array' });
    for (const row of rows as unknown[][]) lines.push(`${table}: ${row.join(' | ')}`);
  }
  return lines.join('\n');
}

/** A LoggerService that keeps every message and every argument as text. */
class CapturingLogger implements LoggerService {
  readonly lines: string[] = [];
  private keep(level: string, message: unknown, params: unknown[]) {
    this.lines.push(
      `${level} ${[message, ...params].map((p) => (p instanceof Error ? `${p.message}\n${p.stack}` : typeof p === 'string' ? p : JSON.stringify(p))).join(' ')}`,
    );
  }
  log(message: unknown, ...params: unknown[]) {
    this.keep('log', message, params);
  }
  error(message: unknown, ...params: unknown[]) {
    this.keep('error', message, params);
  }
  warn(message: unknown, ...params: unknown[]) {
    this.keep('warn', message, params);
  }
  debug(message: unknown, ...params: unknown[]) {
    this.keep('debug', message, params);
  }
  verbose(message: unknown, ...params: unknown[]) {
    this.keep('verbose', message, params);
  }
  fatal(message: unknown, ...params: unknown[]) {
    this.keep('fatal', message, params);
  }
}

/**
 * Mints, uses, lists and revokes a key, and makes the failures a careless log line would
 * carry a credential in: a tampered key, a revoked key, a forged session, a key on a
 * session-only route, a key sent as a body field and as a header.
 */
async function lifecycle(options: TestAppOptions): Promise<Record<string, string>> {
  const t = await startTestApp(options);
  try {
    const w = await t.seed.world('owner');
    const { key, lookup, id } = await mintOk(t, w.session, { org_id: w.orgId, scopes: [READ, WRITE] });
    expect((await t.api.get('/me', key)).status).toBe(200);
    expect((await t.api.get('/usage', key)).status).toBe(200);
    expect((await t.api.get('/api-keys', key)).status).toBe(403);
    expect((await t.api.get('/me', key.slice(0, -1) + (key.endsWith('a') ? 'b' : 'a'))).status).toBe(401);
    expect((await t.api.post('/api-keys', w.session, { org_id: w.orgId, key })).status).toBe(400);
    expect((await t.api.get('/me', w.session, { 'x-org-id': key })).status).toBe(400);
    const forged = t.seed.session(w.userId, w.email, { secret: 'another-secret-another-secret-another-secret' });
    expect((await t.api.get('/me', forged)).status).toBe(401);
    expect((await t.api.get(`/api-keys?org_id=${key}`, w.session)).status).toBe(400);
    expect((await t.api.delete(`/api-keys/${key}`, w.session)).status).toBe(400);
    expect((await t.api.delete(`/api-keys/${id}`, w.session)).status).toBe(204);
    expect((await t.api.get('/me', key)).status).toBe(401);
    await t.app.get(LastUsedWriter).flush();
    return {
      key,
      'secret part': secretPart(key, lookup),
      'session JWT': w.session,
      'forged JWT': forged,
      'JWT signature': w.session.split('.')[2],
      API_KEY_SECRET: TEST_API_KEY_SECRET,
      SESSION_JWT_SECRET: TEST_SESSION_SECRET,
    };
  } finally {
    await t.close();
  }
}

describe('logs', () => {
  afterEach(() => vi.restoreAllMocks());

  it('carry no key, no JWT and no secret through mint, use and revoke (captured LoggerService)', async () => {
    const logger = new CapturingLogger();
    const secrets = await lifecycle({ logger });
    // The capture works: the app did log (its routes, its start).
    expect(logger.lines.length).toBeGreaterThan(0);
    expect(logger.lines.join('\n')).toContain('/api-keys');
    expectNoneOf(logger.lines.join('\n'), secrets);
  });

  it("carry no key, no JWT and no secret with the app's real console logger", async () => {
    const written: string[] = [];
    const capture = (chunk: unknown) => {
      written.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('utf8'));
      return true;
    };
    vi.spyOn(process.stdout, 'write').mockImplementation(capture as typeof process.stdout.write);
    vi.spyOn(process.stderr, 'write').mockImplementation(capture as typeof process.stderr.write);
    const secrets = await lifecycle({ logger: new Logger() });
    vi.restoreAllMocks();
    expect(written.join('')).toContain('/api-keys');
    expectNoneOf(written.join(''), secrets);
  });
});
