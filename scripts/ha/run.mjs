// `npm run test:ha`: high availability on PostgreSQL's own tooling, shown on one machine.
//
// Builds the cluster of cluster.mjs (Patroni + etcd, two PostgreSQL 15 nodes in synchronous
// mode, HAProxy to the primary, PgBouncer in transaction mode), starts three instances of the
// built server (DATABASE_URL through PgBouncer, DATABASE_DIRECT_URL through HAProxy) and a host
// application that charges (bench/charge-host.mjs, the module's `database.directUrl`), puts them
// under a bounded load of mints, revokes, verifications and charges, and then:
//   1. a planned switchover (`patronictl switchover`);
//   2. etcd stopped while the primary is alive (Patroni's failsafe mode): service goes on;
//   3. the primary's node lost: its Patroni agent and its postmaster `kill -9`ed.
// It asserts what docs/operations.md ("High availability") promises, prints what it measured,
// then runs the end-to-end tests of keys, revocation and charging with DATABASE_URL through the
// same PgBouncer. Everything it starts is stopped and its directory removed, pass or fail.
//
// Environment: HA_SKIP_BUILD=1 (dist/ is fresh: CI runs this right after `npm test`),
// HA_SKIP_E2E=1, HA_KEEP_DIR=1 (keep /tmp/kui-ha-* for a post-mortem).
import { spawn, spawnSync } from 'node:child_process';
import { createHmac, createSecretKey, randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import jwt from 'jsonwebtoken';
import pg from 'pg';
import { Cluster, DB, ensurePackages, NODES, PORTS, restGet, TTL_SECONDS, waitFor } from './cluster.mjs';

const ROOT = resolve(import.meta.dirname, '../..');
const SESSION_SECRET = 'ha-session-secret-0123456789abcdef-0123456789';
const API_KEY_SECRET = 'ha-api-key-secret-0123456789abcdef-0123456789';
const HTTP_PORTS = [13001, 13002, 13003];
const CHARGE_PORT = 13004;
const POOLED_URL = `postgres://postgres@127.0.0.1:${PORTS.pgbouncer}/${DB}`;
const DIRECT_URL = `postgres://postgres@127.0.0.1:${PORTS.haproxy}/${DB}`;
/** Recovery must be complete this long after the promotion (the bound). */
const RECOVERY_BOUND_MS = 10_000;
const WORKERS = 6;
const REQUEST_TIMEOUT_MS = 8_000;

const started = Date.now();
const log = (m) => process.stdout.write(`[test:ha ${((Date.now() - started) / 1000).toFixed(1).padStart(6)}s] ${m}\n`);
const failures = [];
const check = (ok, what) => {
  if (!ok) failures.push(what);
  log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
};

const cluster = new Cluster(log);
const instances = [];
let stopping = false;

async function cleanup() {
  if (stopping) return;
  stopping = true;
  await Promise.all(instances.map((i) => i.stop()));
  await cluster.stop();
}
for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => void cleanup().finally(() => process.exit(130)));
// Whatever goes wrong, nothing started here outlives the run.
process.on('uncaughtException', (error) => {
  log(`FAIL uncaught: ${error.stack ?? error}`);
  void cleanup().finally(() => process.exit(1));
});

// ---------------------------------------------------------------------------------------------
// Processes of the service

function startProcess(name, args, env, probeUrl) {
  const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const keep = (d) => {
    out += d;
    if (out.length > 400_000) out = out.slice(-200_000);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  // Ready once it answers HTTP at all (its logs are at warn: no "Listening on" line to wait for).
  const exited = new Promise((_, fail) =>
    child.once('exit', (code) => fail(new Error(`${name} exited with ${code}:\n${out.slice(-4000)}`))),
  );
  exited.catch(() => undefined);
  const ready = Promise.race([
    exited,
    waitFor(`${name} to answer`, async () => (await http(probeUrl)).status > 0, 90_000, 250).catch((e) => {
      throw new Error(`${e.message}\n${out.slice(-4000)}`);
    }),
  ]);
  return {
    name,
    child,
    ready,
    output: () => out,
    alive: () => child.exitCode === null && child.signalCode === null,
    stop: () =>
      new Promise((ok) => {
        if (child.exitCode !== null || child.signalCode !== null) return ok();
        const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
        child.once('exit', () => (clearTimeout(t), ok()));
        child.kill('SIGTERM');
      }),
  };
}

function serviceEnv(i) {
  const dataDir = join(cluster.dir, `service-${i}`);
  mkdirSync(dataDir, { recursive: true });
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    NODE_ENV: 'test',
    HOST: '127.0.0.1',
    PORT: String(HTTP_PORTS[i]),
    DATA_DIR: dataDir,
    DATABASE_URL: POOLED_URL,
    DATABASE_DIRECT_URL: DIRECT_URL,
    // All three migrate at once: the migration lock (a session's advisory lock) is taken on the direct URL.
    DB_MIGRATE: 'true',
    SESSION_JWT_SECRET: SESSION_SECRET,
    API_KEY_SECRET,
    MINT_RATE_LIMIT: '0',
    AUTH_FAILURE_LIMIT: '0',
    MAX_ACTIVE_KEYS_PER_USER_ORG: '100000',
    LOG_LEVEL: 'warn',
    LOG_FORMAT: 'json',
    DB_POOL_MAX: '8',
  };
}

// ---------------------------------------------------------------------------------------------
// Load

const now = () => performance.now();

class Recorder {
  constructor() {
    this.events = []; // { t, kind, status, retryAfter, target }
    this.minted = new Map(); // id -> { key, at }
    this.live = []; // ids minted and not (yet) asked to be revoked
    this.revoked = new Map(); // id -> acknowledged at (performance.now())
    this.revokedKeys = []; // { key, at }
    this.unsure = []; // revokes not acknowledged
    this.claimed = new Set(); // ids a worker took from live to revoke
    this.violations = []; // a revoked key accepted after its revoke was acknowledged
    this.charges = { ok: 0, attempted: 0 };
  }
  add(kind, status, t, extra = {}) {
    this.events.push({ t, kind, status, ...extra });
  }
}

async function http(url, init = {}) {
  try {
    const res = await fetch(url, { ...init, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    const body = await res.text();
    return { status: res.status, retryAfter: res.headers.get('retry-after'), body };
  } catch {
    return { status: 0, retryAfter: null, body: '' };
  }
}

function pick(list) {
  return list[Math.floor(Math.random() * list.length)];
}

/** One worker: mints, revokes, verifications (of live and of revoked keys) and charges, round robin over the instances. */
async function worker(w, rec, world, until) {
  let n = 0;
  while (now() < until() && !stopping) {
    n++;
    const base = `http://127.0.0.1:${HTTP_PORTS[(w + n) % HTTP_PORTS.length]}`;
    const user = world.users[(w + n) % world.users.length];
    const roll = Math.random();
    const sent = now();
    if (roll < 0.3 || rec.live.length < 5) {
      const r = await http(`${base}/api-keys`, {
        method: 'POST',
        headers: { authorization: `Bearer ${user.session}`, 'content-type': 'application/json' },
        body: JSON.stringify({ org_id: world.orgId, name: `ha-${w}-${n}`, scopes: ['decisions:read'] }),
      });
      rec.add('mint', r.status, sent, { retryAfter: r.retryAfter, body: r.body.slice(0, 300) });
      if (r.status === 201) {
        const k = JSON.parse(r.body);
        rec.minted.set(k.id, { key: k.key, user, at: now() });
        rec.live.push(k.id);
      }
    } else if (roll < 0.42) {
      // Claimed first, so no other worker revokes it too or verifies it as a live key meanwhile.
      const id = rec.live.splice(Math.floor(Math.random() * rec.live.length), 1)[0];
      rec.claimed.add(id);
      const m = rec.minted.get(id);
      const r = await http(`${base}/api-keys/${id}`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${m.user.session}` },
      });
      rec.add('revoke', r.status, sent, { retryAfter: r.retryAfter, body: r.body.slice(0, 300) });
      if (r.status === 204) {
        rec.revoked.set(id, now());
        rec.revokedKeys.push({ id, key: m.key, at: now() });
      } else if (r.status !== 404) {
        // Not acknowledged (a 503): it may or may not have happened; never verified as live again.
        rec.unsure.push(id);
      }
    } else if (roll < 0.82) {
      // Half of the verifications use a key whose revoke was acknowledged: it must never be accepted.
      const revoked = rec.revokedKeys.length > 0 && Math.random() < 0.5 ? pick(rec.revokedKeys) : null;
      const id = revoked ? revoked.id : pick(rec.live);
      const key = revoked ? revoked.key : rec.minted.get(id).key;
      const r = await http(`${base}/me`, { headers: { authorization: `Bearer ${key}` } });
      // A live key that another worker claimed for revoking while this request was in flight may
      // rightly be refused: it counts as a verification of a revoked key, not as a failure.
      const raced = !revoked && r.status === 401 && rec.claimed.has(id);
      rec.add(revoked || raced ? 'verify-revoked' : 'verify', r.status, sent, {
        retryAfter: r.retryAfter,
        body: r.body.slice(0, 300),
      });
      if (revoked && r.status === 200 && sent > revoked.at)
        rec.violations.push({ id: revoked.id, base, afterMs: Math.round(sent - revoked.at) });
    } else {
      rec.charges.attempted++;
      const r = await http(`http://127.0.0.1:${CHARGE_PORT}/host/ask`, {
        headers: { authorization: `Bearer ${world.chargeKey}` },
      });
      rec.add('charge', r.status, sent, { retryAfter: r.retryAfter, body: r.body.slice(0, 300) });
      if (r.status === 200) rec.charges.ok++;
    }
    await sleep(15);
  }
}

/** Polls every instance's readiness every 200 ms. */
async function readinessProbe(rec, until) {
  while (now() < until() && !stopping) {
    const t = now();
    const statuses = await Promise.all(
      HTTP_PORTS.map(async (p) => (await http(`http://127.0.0.1:${p}/health/ready`)).status),
    );
    const live = await Promise.all(
      HTTP_PORTS.map(async (p) => (await http(`http://127.0.0.1:${p}/health/live`)).status),
    );
    rec.add('ready', statuses.every((s) => s === 200) ? 200 : statuses.some((s) => s === 200) ? 207 : 503, t, {
      statuses,
    });
    rec.add('live', live.every((s) => s === 200) ? 200 : 0, t);
    await sleep(200);
  }
}

function runLoad(rec, world) {
  let end = Infinity;
  const until = () => end;
  const done = Promise.all([
    ...Array.from({ length: WORKERS }, (_, w) => worker(w, rec, world, until)),
    readinessProbe(rec, until),
  ]);
  return { stop: async () => ((end = 0), await done) };
}

const API = ['mint', 'revoke', 'verify', 'verify-revoked', 'charge'];
const ok = (e) =>
  (e.kind === 'mint' && e.status === 201) ||
  (e.kind === 'revoke' && (e.status === 204 || e.status === 404)) ||
  (e.kind === 'verify' && e.status === 200) ||
  (e.kind === 'verify-revoked' && e.status === 401) ||
  (e.kind === 'charge' && e.status === 200);

function window(rec, from, to) {
  return rec.events.filter((e) => e.t >= from && e.t < to && API.includes(e.kind));
}

function summarize(events) {
  const by = {};
  for (const e of events) by[e.status] = (by[e.status] ?? 0) + 1;
  return by;
}

/** Prints each failed API request in [from, to): when, what, the answer's status and body. */
function logFailures(rec, from, to) {
  for (const e of window(rec, from, to).filter((x) => !ok(x)))
    log(`  failed at +${((e.t - from) / 1000).toFixed(1)} s: ${e.kind} ${e.status} ${e.body ?? ''}`);
}

/** The span (first to last) of failed API requests in [from, to), in ms, or 0. */
function failureSpan(rec, from, to) {
  const bad = window(rec, from, to).filter((e) => !ok(e));
  if (bad.length === 0) return { span: 0, count: 0, first: null, last: null };
  return { span: bad.at(-1).t - bad[0].t, count: bad.length, first: bad[0].t, last: bad.at(-1).t };
}

// ---------------------------------------------------------------------------------------------

async function seed(pool) {
  const { rows: orgRows } = await pool.query(`INSERT INTO orgs (name, plan) VALUES ('HA', 'pro') RETURNING id`);
  const orgId = orgRows[0].id;
  const users = [];
  for (let i = 0; i < 6; i++) {
    const email = `ha-${i}-${randomUUID()}@example.com`;
    const { rows } = await pool.query(`INSERT INTO users (email) VALUES ($1) RETURNING id`, [email]);
    const id = rows[0].id;
    await pool.query(`INSERT INTO memberships (org_id, user_id, role) VALUES ($1, $2, 'owner')`, [orgId, id]);
    await pool.query(`INSERT INTO workspaces (org_id, user_id) VALUES ($1, $2)`, [orgId, id]);
    const session = jwt.sign({ email }, createSecretKey(Buffer.from(SESSION_SECRET)), {
      algorithm: 'HS256',
      subject: id,
      expiresIn: 3600,
    });
    users.push({ id, email, session });
  }
  return { orgId, users };
}

async function query(url, sql, params) {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  // A connection cut between statements (HAProxy shutting the sessions of a server it marks down,
  // a failover) is an 'error' event besides the rejected promise: without a listener, an uncaught
  // exception that ends the run.
  c.on('error', () => undefined);
  await c.connect();
  try {
    return (await c.query(sql, params)).rows;
  } finally {
    await c.end();
  }
}

async function waitSyncStandby() {
  await waitFor(
    'a synchronous standby',
    async () => {
      const leader = await cluster.leader();
      const other = NODES.find((n) => n !== leader);
      return leader && (await restGet(cluster.restPort(other), '/sync')) === 200;
    },
    90_000,
    250,
  );
}

async function main() {
  ensurePackages(log);
  if (!process.env.HA_SKIP_BUILD) {
    log('building dist/ (npm run build)');
    const b = spawnSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'inherit' });
    if (b.status !== 0) throw new Error('npm run build failed');
  }
  await cluster.start();
  // HAProxy counts every server up until its first checks: wait until it routes to the primary only.
  let streak = 0;
  await waitFor('HAProxy to route to the primary', async () => {
    const [{ standby }] = await query(
      `postgres://postgres@127.0.0.1:${PORTS.haproxy}/postgres`,
      'SELECT pg_is_in_recovery() AS standby',
    );
    streak = standby ? 0 : streak + 1;
    return streak >= 5;
  });
  await query(`postgres://postgres@127.0.0.1:${PORTS.haproxy}/postgres`, `CREATE DATABASE ${DB}`);
  log(`database ${DB} created on the primary; starting three instances and the charging host`);

  for (let i = 0; i < 3; i++)
    instances.push(
      startProcess(
        `instance-${i + 1}`,
        ['dist/main.js'],
        serviceEnv(i),
        `http://127.0.0.1:${HTTP_PORTS[i]}/health/live`,
      ),
    );
  await Promise.all(instances.map((i) => i.ready));
  // Bad input, on the migrated database: what the service says for each wrong way to give the URLs.
  await startupRefusals();
  const seeding = new pg.Pool({ connectionString: DIRECT_URL, max: 2 });
  seeding.on('error', () => undefined); // an idle connection cut by a failover must not end the run
  const world = await seed(seeding).finally(() => seeding.end());
  const host = startProcess(
    'charge-host',
    ['bench/charge-host.mjs'],
    {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      PORT: String(CHARGE_PORT),
      HOST: '127.0.0.1',
      DATABASE_URL: POOLED_URL,
      DATABASE_DIRECT_URL: DIRECT_URL,
      SESSION_JWT_SECRET: SESSION_SECRET,
      API_KEY_SECRET,
      DB_POOL_MAX: '6',
    },
    `http://127.0.0.1:${CHARGE_PORT}/host/ask`,
  );
  instances.push(host);
  await host.ready;
  const mint = await http(`http://127.0.0.1:${HTTP_PORTS[0]}/api-keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${world.users[0].session}`, 'content-type': 'application/json' },
    body: JSON.stringify({ org_id: world.orgId, name: 'charges', scopes: ['decisions:read'] }),
  });
  if (mint.status !== 201) throw new Error(`first mint through PgBouncer answered ${mint.status}: ${mint.body}`);
  world.chargeKey = JSON.parse(mint.body).key;
  log('all four processes answer through PgBouncer (transaction mode) with the direct URL through HAProxy');

  const rec = new Recorder();
  const load = runLoad(rec, world);
  const measured = {};
  try {
    await sleep(4000);

    // 0. The pooler's server connections cut mid-transaction (as a pooler or a network drops
    //    them): the primary ends every backend of the service's database, three times.
    const d0 = now();
    let cut = 0;
    for (let i = 0; i < 3; i++) {
      const [{ n }] = await query(
        DIRECT_URL,
        `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
          WHERE datname = $1 AND pid <> pg_backend_pid() AND backend_type = 'client backend'`,
        [DB],
      );
      cut += n;
      await sleep(1000);
    }
    await sleep(2000);
    const d1 = now();
    measured.dropped = { connections: cut, ...failureSpan(rec, d0, d1), statuses: summarize(window(rec, d0, d1)) };
    log(`cut ${cut} server connections mid-flight: ${JSON.stringify(measured.dropped.statuses)}`);

    // 1. A planned switchover.
    const from = await cluster.leader();
    const to = NODES.find((n) => n !== from);
    log(`switchover ${from} -> ${to} (patronictl switchover)`);
    const s0 = now();
    const sw = cluster.patronictl(['switchover', '--leader', from, '--candidate', to, '--force']);
    if (sw.status !== 0) throw new Error(`patronictl switchover failed: ${sw.stderr || sw.stdout}`);
    await waitFor(`${to} to be primary`, async () => (await cluster.leader()) === to, 60_000, 100);
    const s1 = now();
    await sleep(6000);
    const s2 = now();
    measured.switchover = {
      durationMs: s1 - s0,
      ...failureSpan(rec, s0, s2),
      statuses: summarize(window(rec, s0, s2)),
    };
    log(
      `switchover took ${(measured.switchover.durationMs / 1000).toFixed(1)} s; failed requests: ${measured.switchover.count} over ${(measured.switchover.span / 1000).toFixed(1)} s`,
    );
    await waitSyncStandby();

    // 2. etcd down, the primary alive.
    const primaryBefore = await cluster.leader();
    log(`etcd stopped with ${primaryBefore} primary; load goes on for ${TTL_SECONDS + 5} s`);
    const e0 = now();
    await cluster.stopEtcd();
    await sleep((TTL_SECONDS + 5) * 1000);
    const e1 = now();
    const primaryDuring = await cluster.leader();
    measured.etcdDown = {
      ms: e1 - e0,
      ...failureSpan(rec, e0, e1),
      statuses: summarize(window(rec, e0, e1)),
      primaryBefore,
      primaryDuring,
    };
    log(`etcd down: ${JSON.stringify(measured.etcdDown.statuses)}`);
    logFailures(rec, e0, e1);
    await cluster.startEtcd();
    await sleep(3000);
    await waitSyncStandby();

    // 3. The primary's node lost: Patroni agent and postmaster, kill -9.
    const victim = await cluster.leader();
    const survivor = NODES.find((n) => n !== victim);
    await sleep(2000);
    const k0 = now();
    const pm = cluster.killNode(victim);
    log(
      `kill -9 of ${victim}'s postmaster (pid ${pm}) and Patroni agent; ${survivor} should take over after the leader key's TTL (${TTL_SECONDS} s)`,
    );
    await waitFor(`${survivor} promoted`, async () => (await cluster.leader()) === survivor, 90_000, 100);
    const promoted = now();
    log(`${survivor} is primary ${((promoted - k0) / 1000).toFixed(1)} s after the kill`);
    await sleep(RECOVERY_BOUND_MS + 3000);
    const k1 = now();
    measured.failover = { noPrimaryMs: promoted - k0, promoted, k0, k1 };
  } finally {
    await load.stop();
  }

  // ----- What the failover showed.
  const { k0, k1, promoted } = measured.failover;
  const during = window(rec, k0, k1);
  const all = rec.events.filter((e) => API.includes(e.kind));
  const serverErrors = all.filter((e) => e.status >= 500 && e.status !== 503);
  const refused = all.filter((e) => e.status === 503);
  const noAnswer = all.filter((e) => e.status === 0);
  const lastBad = failureSpan(rec, k0, k1).last;
  // Recovered: the first moment after which every mint and verification succeeded.
  const recoveredAt = lastBad === null ? k0 : lastBad;
  const recoveryMs = Math.max(0, recoveredAt - promoted);
  const readiness = rec.events.filter((e) => e.kind === 'ready' && e.t >= k0 && e.t < k1);
  const notReadyFirst = readiness.find((e) => e.status !== 200);
  const readyAgain = notReadyFirst ? readiness.find((e) => e.t > notReadyFirst.t && e.status === 200) : null;

  log('checking the new primary for every acknowledged mint and revoke');
  const ids = [...rec.minted.keys()];
  const rows = await query(
    DIRECT_URL,
    `SELECT id::text, revoked_at IS NOT NULL AS revoked FROM api_keys WHERE id = ANY($1::uuid[])`,
    [ids],
  );
  const stored = new Map(rows.map((r) => [r.id, r.revoked]));
  const lostMints = ids.filter((id) => !stored.has(id));
  const lostRevokes = [...rec.revoked.keys()].filter((id) => stored.get(id) !== true);
  // Leased charging (the default) counts behind the answers, at least every second, and keeps a
  // count the database refused (the failover) for its next write: read until every acknowledged
  // charge is counted, for at most 10 s (the exact path has them all at the first read).
  const countedAsks = async () =>
    (
      await query(DIRECT_URL, `SELECT COALESCE(sum(asks), 0)::int AS asks FROM usage_counters WHERE org_id = $1`, [
        world.orgId,
      ])
    )[0].asks;
  let asks = await countedAsks();
  for (const until = Date.now() + 10_000; asks < rec.charges.ok && Date.now() < until; asks = await countedAsks())
    await sleep(250);
  // Nothing half-written: every key stored has its mint's audit event, every revoked one its revoke's.
  const [halves] = await query(
    DIRECT_URL,
    `SELECT count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM audit_events a WHERE a.target_id = k.id AND a.action = 'api_key.minted'))::int AS mint,
            count(*) FILTER (WHERE k.revoked_at IS NOT NULL AND NOT EXISTS (
              SELECT 1 FROM audit_events a WHERE a.target_id = k.id AND a.action = 'api_key.revoked'))::int AS revoke
       FROM api_keys k WHERE k.org_id = $1`,
    [world.orgId],
  );
  const liveInstances = instances.filter((i) => i.alive()).length;
  const liveProbes = rec.events.filter((e) => e.kind === 'live');

  const s = measured.switchover;
  const table = [
    ['requests (mint, revoke, verify, charge)', all.length],
    ['acknowledged mints / revokes', `${rec.minted.size} / ${rec.revoked.size}`],
    ['switchover: duration (patronictl to new primary)', `${(s.durationMs / 1000).toFixed(1)} s`],
    ['switchover: requests refused (503) / span', `${s.count} / ${(s.span / 1000).toFixed(1)} s`],
    [
      'etcd down with the primary alive: requests / failed',
      `${Object.values(measured.etcdDown.statuses).reduce((a, b) => a + b, 0)} / ${measured.etcdDown.count}`,
    ],
    [
      'failover: time without a primary (kill -9 to promotion)',
      `${(measured.failover.noPrimaryMs / 1000).toFixed(1)} s`,
    ],
    ['failover: requests refused with 503 (all with Retry-After)', `${during.filter((e) => e.status === 503).length}`],
    ['failover: service back after the promotion', `${(recoveryMs / 1000).toFixed(1)} s`],
    [
      'failover: /health/ready not ready for',
      notReadyFirst && readyAgain ? `${((readyAgain.t - notReadyFirst.t) / 1000).toFixed(1)} s` : 'n/a',
    ],
    [
      'server connections cut mid-transaction: cut / requests refused (503)',
      `${measured.dropped.connections} / ${measured.dropped.count}`,
    ],
    ['answers 500 (or other 5xx but 503)', serverErrors.length],
    ['keys without their mint / revoke audit event (half-written)', `${halves.mint} / ${halves.revoke}`],
    ['requests without an answer (timeout, reset)', noAnswer.length],
    ['acknowledged mints / revokes missing on the new primary', `${lostMints.length} / ${lostRevokes.length}`],
    ['revoked keys accepted after the revoke was acknowledged', rec.violations.length],
    ['charges answered 200 / counted / attempted', `${rec.charges.ok} / ${asks} / ${rec.charges.attempted}`],
    ['instances still running', `${liveInstances} of ${instances.length}`],
  ];
  process.stdout.write('\n  test:ha measured\n');
  for (const [k, v] of table) process.stdout.write(`  ${k.padEnd(70)} ${v}\n`);
  process.stdout.write('\n');

  check(serverErrors.length === 0, `no 500: ${JSON.stringify(summarize(serverErrors))}`);
  check(
    refused.every((e) => e.retryAfter !== null || e.kind === 'charge'),
    'every 503 of the service carries Retry-After',
  );
  check(liveInstances === instances.length, 'no instance exited');
  check(
    liveProbes.every((e) => e.status === 200),
    'every instance answered /health/live throughout',
  );
  check(noAnswer.length === 0, `every request was answered (${noAnswer.length} without an answer)`);
  check(
    halves.mint === 0 && halves.revoke === 0,
    'nothing half-written: every stored mint and revoke has its audit event',
  );
  check(
    measured.dropped.connections > 0,
    'the cut of server connections mid-transaction hit the service (503s, never 500s)',
  );
  check(lostMints.length === 0, `every acknowledged mint (${rec.minted.size}) is on the new primary`);
  check(lostRevokes.length === 0, `every acknowledged revoke (${rec.revoked.size}) is on the new primary`);
  check(
    rec.violations.length === 0,
    `no revoked key accepted after its revoke was acknowledged ${JSON.stringify(rec.violations.slice(0, 3))}`,
  );
  check(
    asks >= rec.charges.ok && asks <= rec.charges.attempted,
    'charges: every acknowledged one counted, none counted twice or unasked',
  );
  check(
    during.some((e) => e.status === 503),
    'while there was no primary, requests were refused with 503',
  );
  check(
    recoveryMs <= RECOVERY_BOUND_MS,
    `mints and verifications succeed again within ${RECOVERY_BOUND_MS / 1000} s of the promotion (${(recoveryMs / 1000).toFixed(1)} s)`,
  );
  check(Boolean(notReadyFirst && readyAgain), '/health/ready said not ready without a primary, and ready again after');
  check(primaryKept(measured), 'etcd down: the primary kept its role (Patroni failsafe mode)');
  check(
    measured.etcdDown.count === 0,
    `etcd down with the primary alive: every request served (${measured.etcdDown.count} failed)`,
  );
  check(s.span <= s.durationMs + 3000, 'switchover: no request failed for longer than the switchover itself (+3 s)');
  return { all };
}

/** Runs dist/main.js with `env` until it exits (at most 60 s); its code and output. */
function runToExit(env) {
  return new Promise((ok) => {
    const child = spawn(process.execPath, ['dist/main.js'], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        NODE_ENV: 'test',
        HOST: '127.0.0.1',
        PORT: '13009',
        ...env,
      },
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const t = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('exit', (code) => (clearTimeout(t), ok({ code, out })));
  });
}

/** Bad input: what the service says, and that it stops, for each wrong way to give it the URLs. */
async function startupRefusals() {
  const base = {
    SESSION_JWT_SECRET: SESSION_SECRET,
    API_KEY_SECRET,
    DATA_DIR: join(cluster.dir, 'refusals'),
    DB_MIGRATE: 'false',
    LOG_LEVEL: 'warn',
  };
  mkdirSync(base.DATA_DIR, { recursive: true });
  const [notPostgres, directThroughPooler, pooledWithoutDirect] = await Promise.all([
    runToExit({ ...base, DATABASE_URL: POOLED_URL, DATABASE_DIRECT_URL: 'mysql://root@127.0.0.1/kui' }),
    runToExit({ ...base, DATABASE_URL: POOLED_URL, DATABASE_DIRECT_URL: POOLED_URL, DB_MIGRATE: 'false' }),
    runToExit({ ...base, DATABASE_URL: POOLED_URL }),
  ]);
  const lines = (out, re) => out.split('\n').filter((l) => re.test(l));
  check(
    notPostgres.code !== 0 && lines(notPostgres.out, /DATABASE_DIRECT_URL/).length === 1,
    `a DATABASE_DIRECT_URL that is not postgres:// stops the start with one line: ${lines(notPostgres.out, /DATABASE_DIRECT_URL/)[0]?.trim()}`,
  );
  check(
    directThroughPooler.code !== 0 &&
      /DATABASE_DIRECT_URL probably goes through a connection pooler/.test(directThroughPooler.out),
    'a DATABASE_DIRECT_URL through PgBouncer in transaction mode is refused at start, naming it',
  );
  check(
    pooledWithoutDirect.code !== 0 &&
      /set DATABASE_DIRECT_URL/.test(pooledWithoutDirect.out) &&
      !/retrying/.test(pooledWithoutDirect.out),
    'DATABASE_URL through PgBouncer without DATABASE_DIRECT_URL stops at once, saying to set it',
  );
  if (failures.length)
    log(`startup outputs:\n${notPostgres.out}\n${directThroughPooler.out}\n${pooledWithoutDirect.out}`);
}

function primaryKept(measured) {
  return (
    measured.etcdDown.primaryBefore !== null && measured.etcdDown.primaryDuring === measured.etcdDown.primaryBefore
  );
}

async function e2eThroughPgBouncer() {
  if (process.env.HA_SKIP_E2E) return;
  log('end-to-end tests of keys, revocation and charging with DATABASE_URL through PgBouncer (transaction mode)');
  const files = [
    'test/e2e/api-keys-mint.test.ts',
    'test/e2e/api-keys-list-revoke.test.ts',
    'test/e2e/metering.test.ts',
  ];
  // Their databases on the machine's PostgreSQL (as npm test's), with PgBouncer in front of it.
  const machine = `postgres://postgres@127.0.0.1:${PORTS.machinePg}/postgres`;
  const reachable = await query(machine, 'SELECT 1').then(
    () => true,
    () => false,
  );
  if (!reachable) {
    check(false, `end-to-end tests through PgBouncer need the machine's PostgreSQL at ${machine} (HA_MACHINE_PG_PORT)`);
    return;
  }
  const vitest = join(ROOT, 'node_modules', 'vitest', 'vitest.mjs');
  const r = spawnSync(process.execPath, [vitest, 'run', '--project', 'db', ...files], {
    // Bounded, like everything here: a hung run fails instead of holding CI.
    timeout: 6 * 60_000,
    killSignal: 'SIGKILL',
    cwd: ROOT,
    stdio: 'inherit',
    env: { ...process.env, TEST_DATABASE_URL: machine, TEST_DATABASE_POOLER: `127.0.0.1:${PORTS.pgbouncer}` },
  });
  check(r.status === 0, `end-to-end tests through PgBouncer: ${files.join(', ')}`);
}

try {
  await main();
  for (const i of instances) await i.stop();
  await e2eThroughPgBouncer();
} catch (error) {
  failures.push(error.message);
  log(`FAIL ${error.stack ?? error}`);
  for (const i of instances) log(`--- ${i.name} (last lines)\n${i.output().slice(-3000)}`);
  for (const [name, child] of cluster.children) log(`--- ${name} (last lines)\n${child.output().slice(-1500)}`);
} finally {
  await cleanup();
}
log(failures.length === 0 ? 'passed' : `${failures.length} failed:\n  - ${failures.join('\n  - ')}`);
process.exit(failures.length === 0 ? 0 : 1);
