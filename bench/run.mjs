// `npm run bench`: the service on real PostgreSQL against a bare node:http server, same machine,
// same load. See docs/performance.md, "Running the bench". Plain ESM JavaScript, run as is (the service is built first).
//
// Environment:
//   DATABASE_URL        admin URL of a PostgreSQL server (default postgres://postgres@127.0.0.1:5432/test);
//                       the bench creates a database of its own there and drops it afterwards
//   BENCH_DURATION      seconds per measured run (default 6)
//   BENCH_CONNECTIONS   concurrent connections (default 50)
//   BENCH_CASES         comma-separated subset of cases (default all)
//   BENCH_ROUNDS        how many times each case runs, alternating with the baseline (default 2)
//   BENCH_USERS         members of the bench org, each with a session and a key; the connections
//                       share them round robin (default 1: one user, one key, one session)
//   BENCH_VERIFICATION_CACHE  false: run the service with its verification cache off (default true)
//   BENCH_PROFILE       a directory: the service runs with --cpu-prof and writes its profile there
//   BENCH_SERVICE_STDOUT  a file: the service's stdout goes there, each chunk stamped with the wall
//                       time (with BENCH_NODE_FLAGS="… --trace-gc", to line collections up with cases)
//   BENCH_VERBOSE=1     pass the service's stderr through
//   BENCH_NO_FAIL=1     or the flag --no-fail: print FAIL rows but exit 0
import { spawn } from 'node:child_process';
import { createSecretKey, randomBytes } from 'node:crypto';
import { createWriteStream, existsSync, readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import jwt from 'jsonwebtoken';
import pg from 'pg';

const SERVICE_NODE_FLAGS = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).config
  .serviceNodeFlags;

const root = resolve(import.meta.dirname, '..');
const ADMIN_URL = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';
const DURATION = Number(process.env.BENCH_DURATION || 6);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS || 50);
const ROUNDS = Number(process.env.BENCH_ROUNDS || 2);
const USERS = Number(process.env.BENCH_USERS || 1);
const WARMUP_SECONDS = 2;
/** A run across which the bare server's req/s moved by more than this share is run again (at most MAX_RERUNS times). */
const DRIFT = Number(process.env.BENCH_DRIFT || 0.1);
const MAX_RERUNS = 2;
let reruns = 0;
const NO_FAIL = process.argv.includes('--no-fail') || process.env.BENCH_NO_FAIL === '1';
const PROFILE_DIR = process.env.BENCH_PROFILE ? resolve(process.env.BENCH_PROFILE) : null;
const SESSION_SECRET = 'bench-session-secret-0123456789abcdef-0123456789';
const API_KEY_SECRET = 'bench-api-key-secret-0123456789abcdef-0123456789';
const RSS_LIMIT_MB = 250;
const CLK_TCK = 100; // USER_HZ, 100 on every Linux we know of

// Targets, as ratios of the bare server's req/s in the same run.
const TARGETS = {
  'me-key': { ratio: 0.3, p99: 15 },
  'me-session': { ratio: 0.25 },
  'usage-key': { ratio: 0.25 },
  'mint-session': {},
  // Verification cache: 1,000 distinct keys over 50 connections.
  'me-key-1000': { ratio: 0.45, p99: 10 },
  // Per-key controls: the same 1,000-key GET /me with keys that have a rate window (far above the
  // load, so every request is admitted) or credits; ratios to me-key-1000 of the same round. They
  // run right after it (cases run in this order), so that each pair is measured seconds apart and
  // nothing else the bench does (the revokes below, their events) runs between them.
  'me-key-1000-limited': { ofCase: 'me-key-1000', ofRatio: 0.9, p99: 10 },
  'me-key-1000-credits': { ofCase: 'me-key-1000', ofRatio: 0.6, p99: 10 },
  // Session /me with 50 users, and revocations during the 1,000-key load (every revoked key
  // probed right after its 204).
  'me-session-50': { ratio: 0.4 },
  'revoke-under-load': { revokeP99: 50 },
};
/** The controls of the keys of the two cases above: never reached by a bench run. */
const LIMITED_KEY = { rate_limits: [{ name: 'default', limit: 1_000_000_000, window_seconds: 60 }] };
const CREDITED_KEY = { credits: { remaining: 100_000_000_000 } };
const MANY_USERS = 50;
const KEYS_PER_USER = 20; // 50 × 20 = 1,000 distinct keys
// 100 per run, so that the p99 is the 99th of 100 latencies, not the one worst (as it was with 40).
const REVOKES_PER_RUN = 100;

// With two or more cores, the server gets core 0 and the load generator core 1, so they do not
// steal each other's time. (PostgreSQL is left to the scheduler.)
const PIN = existsSync('/usr/bin/taskset') || existsSync('/bin/taskset') ? cpus().length >= 2 : false;
const pinned = (cpu, argv) => (PIN ? ['taskset', ['-c', String(cpu), ...argv]] : [argv[0], argv.slice(1)]);

function withDatabase(url, name) {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

const children = new Set();

function start(cpu, argv, env) {
  const [cmd, args] = pinned(cpu, argv);
  const child = spawn(cmd, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  child.on('exit', () => children.delete(child));
  return child;
}

function stop(child) {
  if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((done) => {
    const force = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('exit', () => {
      clearTimeout(force);
      done();
    });
    child.kill('SIGTERM');
  });
}

function collect(stream) {
  let text = '';
  stream.setEncoding('utf8');
  stream.on('data', (d) => {
    text += d;
    if (text.length > 64_000) text = text.slice(-32_000);
  });
  return () => text;
}

async function freePort() {
  const { createServer } = await import('node:net');
  return new Promise((done, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => done(port));
    });
  });
}

async function startBare(script = 'bare-server.mjs', flags = []) {
  const child = start(0, [process.execPath, ...flags, join(root, 'bench', script)], process.env);
  const port = await new Promise((done, fail) => {
    let buf = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d) => {
      buf += d;
      const line = buf.split('\n')[0];
      if (buf.includes('\n')) done(JSON.parse(line).port);
    });
    child.once('exit', (code) => fail(new Error(`bare server exited (${code})`)));
  });
  return { child, url: `http://127.0.0.1:${port}` };
}

async function startService(databaseUrl) {
  const port = await freePort();
  const env = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    NODE_ENV: 'production',
    DATABASE_URL: databaseUrl,
    DB_MIGRATE: 'true',
    SESSION_JWT_SECRET: SESSION_SECRET,
    API_KEY_SECRET,
    AUTH_FAILURE_LIMIT: '0',
    // The mint case mints thousands of keys as one user: measure the path, not the caps.
    MINT_RATE_LIMIT: '0',
    MAX_ACTIVE_KEYS_PER_USER_ORG: '100000',
    LOG_LEVEL: 'warn',
    // BENCH_VERIFICATION_CACHE=false measures the database read per request (the cache off).
    VERIFICATION_CACHE: process.env.BENCH_VERIFICATION_CACHE ?? 'true',
    HOST: '127.0.0.1',
    PORT: String(port),
    // BENCH_DIRECT_URL=1 measures the pooler deployment's settings: the same server named again as
    // DATABASE_DIRECT_URL (LISTEN and migrations there; unnamed statements on DATABASE_URL unless
    // BENCH_NAMED_STATEMENTS=true).
    ...(process.env.BENCH_DIRECT_URL === '1' ? { DATABASE_DIRECT_URL: databaseUrl } : {}),
    ...(process.env.BENCH_NAMED_STATEMENTS ? { DB_NAMED_STATEMENTS: process.env.BENCH_NAMED_STATEMENTS } : {}),
  };
  const flags = PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`] : [];
  // The service runs with the V8 flags `npm start` and the Docker image use (package.json
  // config.serviceNodeFlags); BENCH_NODE_FLAGS replaces them to try other memory/GC settings.
  const nodeFlags = process.env.BENCH_NODE_FLAGS ?? SERVICE_NODE_FLAGS;
  flags.push(...nodeFlags.split(/\s+/).filter(Boolean));
  const child = start(0, [process.execPath, ...flags, join(root, 'dist', 'main.js')], env);
  if (process.env.BENCH_SERVICE_STDOUT) {
    const file = createWriteStream(process.env.BENCH_SERVICE_STDOUT);
    child.stdout.on('data', (d) => file.write(`${new Date().toISOString().slice(11, 23)} ${d}`));
  }
  const out = collect(child.stdout);
  const err = collect(child.stderr);
  if (process.env.BENCH_VERBOSE) child.stderr.pipe(process.stderr);
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the service exited during start:\n${out()}\n${err()}`);
    try {
      const res = await fetch(`${url}/me`);
      if (res.status === 401) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`the service did not start within 60 s:\n${out()}\n${err()}`);
    await sleep(200);
  }
  return { child, url, logs: () => `${out()}\n${err()}` };
}

async function seed(databaseUrl, serviceUrl) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const org = await client.query(`INSERT INTO orgs (name, plan) VALUES ('Bench', 'pro') RETURNING id`);
    const orgId = org.rows[0].id;
    const sessions = [];
    const keys = [];
    for (let i = 0; i < USERS; i++) {
      const email = `bench-${i}@example.com`;
      const user = await client.query(`INSERT INTO users (email) VALUES ($1) RETURNING id`, [email]);
      const userId = user.rows[0].id;
      await client.query(`INSERT INTO memberships (org_id, user_id, role) VALUES ($1, $2, 'owner')`, [orgId, userId]);
      await client.query(`INSERT INTO workspaces (org_id, user_id) VALUES ($1, $2)`, [orgId, userId]);
      // Signed as the identity provider would: HS256 with the shared secret, org resolved by the service.
      const session = jwt.sign({ email }, createSecretKey(Buffer.from(SESSION_SECRET)), {
        algorithm: 'HS256',
        subject: userId,
        expiresIn: 3600,
      });
      sessions.push(session);
      keys.push((await mintKey(serviceUrl, session, orgId)).key);
    }
    const many = await seedMany(client, orgId, serviceUrl);
    return { orgId, sessions, keys, ...many };
  } finally {
    await client.end();
  }
}

async function mintKey(serviceUrl, session, orgId, controls = {}) {
  const res = await fetch(`${serviceUrl}/api-keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${session}`, 'content-type': 'application/json' },
    body: JSON.stringify({ org_id: orgId, name: 'bench', scopes: ['decisions:read'], ...controls }),
  });
  const body = await res.json();
  if (res.status !== 201) throw new Error(`minting a bench key failed: ${res.status} ${JSON.stringify(body)}`);
  return { key: body.key, id: body.id };
}

/** The verification-cache population: 50 users with a session and 20 keys each, and keys set aside to revoke. */
async function seedMany(client, orgId, serviceUrl) {
  const manySessions = [];
  const manyKeys = [];
  const limitedKeys = [];
  const creditedKeys = [];
  const requested = process.env.BENCH_CASES ?? Object.keys(TARGETS).join(',');
  const withLimited = requested.includes('me-key-1000-limited');
  const withCredits = requested.includes('me-key-1000-credits');
  const revocable = [];
  for (let i = 0; i < MANY_USERS; i++) {
    const email = `bench-many-${i}@example.com`;
    const userId = (await client.query(`INSERT INTO users (email) VALUES ($1) RETURNING id`, [email])).rows[0].id;
    await client.query(`INSERT INTO memberships (org_id, user_id, role) VALUES ($1, $2, 'owner')`, [orgId, userId]);
    await client.query(`INSERT INTO workspaces (org_id, user_id) VALUES ($1, $2)`, [orgId, userId]);
    const session = jwt.sign({ email }, createSecretKey(Buffer.from(SESSION_SECRET)), {
      algorithm: 'HS256',
      subject: userId,
      expiresIn: 3600,
    });
    manySessions.push(session);
    for (let k = 0; k < KEYS_PER_USER; k++) manyKeys.push((await mintKey(serviceUrl, session, orgId)).key);
    for (let k = 0; withLimited && k < KEYS_PER_USER; k++)
      limitedKeys.push((await mintKey(serviceUrl, session, orgId, LIMITED_KEY)).key);
    for (let k = 0; withCredits && k < KEYS_PER_USER; k++)
      creditedKeys.push((await mintKey(serviceUrl, session, orgId, CREDITED_KEY)).key);
    // Enough for the warm-up and every run of the revoke case, each round's reruns for drift included.
    const runs = 1 + ROUNDS * (1 + MAX_RERUNS);
    for (let k = 0; k < Math.ceil((runs * REVOKES_PER_RUN) / MANY_USERS) + 1; k++) {
      revocable.push({ session, ...(await mintKey(serviceUrl, session, orgId)) });
    }
  }
  return { manySessions, manyKeys, limitedKeys, creditedKeys, revocable };
}

/**
 * Beside a running load: revokes keys one after another, each verified (so cached) just before,
 * and probes each with a request right after its 204. Returns the revoke latencies and how many
 * probes were wrongly accepted.
 */
async function revokeDuring(ctx, seconds) {
  // From 1 s after the load starts to 1 s before it ends: every revoke counted is under load.
  const deadline = performance.now() + (seconds - 1) * 1000;
  await sleep(1000);
  const latencies = [];
  let acceptedAfter = 0;
  for (let i = 0; i < REVOKES_PER_RUN && performance.now() < deadline; i++) {
    const cycle = performance.now();
    const k = ctx.seed.revocable.shift();
    // Seeded for every run and rerun (seedMany): running out would measure no revoke at all.
    if (!k) throw new Error('the revoke case ran out of keys to revoke');
    const auth = { authorization: `Bearer ${k.key}` };
    await fetch(`${ctx.service.url}/me`, { headers: auth }).then((r) => r.arrayBuffer());
    const t0 = performance.now();
    const res = await fetch(`${ctx.service.url}/api-keys/${k.id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${k.session}` },
    });
    await res.arrayBuffer();
    latencies.push(performance.now() - t0);
    if (res.status !== 204) throw new Error(`revoke answered ${res.status}`);
    const probe = await fetch(`${ctx.service.url}/me`, { headers: auth });
    await probe.arrayBuffer();
    if (probe.status === 200) acceptedAfter++;
    // Spread what is left evenly over the time that is left.
    const left = REVOKES_PER_RUN - i - 1;
    if (left > 0) await sleep(Math.max(0, (deadline - performance.now()) / left - (performance.now() - cycle)));
  }
  latencies.sort((a, b) => a - b);
  const p99 = latencies.length
    ? latencies[Math.min(latencies.length - 1, Math.ceil(latencies.length * 0.99) - 1)]
    : null;
  const p50 = latencies.length ? latencies[Math.ceil(latencies.length * 0.5) - 1] : null;
  return {
    revokeP99: p99,
    revokeP50: p50,
    revokeMax: latencies.at(-1) ?? null,
    acceptedAfter,
    revokes: latencies.length,
  };
}

function rssMb(pid) {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : null;
  } catch {
    return null;
  }
}

/** CPU time (user + system) a process has used so far, in ms; 0 once it is gone. */
function cpuMs(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK;
  } catch {
    return 0;
  }
}

/** The machine's CPU time so far, all cores (jiffies): busy and total, from /proc/stat's first line. */
function machineTicks() {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1, 9).map(Number);
    const total = f.reduce((a, b) => a + b, 0);
    return { busy: total - f[3] - f[4], total }; // less idle and iowait
  } catch {
    return null;
  }
}

/** CPU ms of each PostgreSQL backend serving the bench database (the machine may run other databases). */
async function backendCpu(admin) {
  const { rows } = await admin.query(`SELECT pid FROM pg_stat_activity WHERE datname = $1`, [dbName]);
  return new Map(rows.map((r) => [r.pid, cpuMs(r.pid)]));
}

/**
 * One autocannon run in a child pinned to core 1. For the service it also samples peak RSS and
 * measures CPU time per request of the service and of its PostgreSQL backends: unlike req/s,
 * those hardly move when other work shares the machine.
 */
async function load(options, target = null) {
  const child = start(1, [process.execPath, join(root, 'bench', 'load.mjs'), JSON.stringify(options)], process.env);
  const out = collect(child.stdout);
  const err = collect(child.stderr);
  const pid = target?.pid;
  const cpu0 = pid ? cpuMs(pid) : 0;
  const ticks0 = machineTicks();
  const pg0 = target?.admin ? await backendCpu(target.admin) : null;
  let maxRss = target?.admin ? (rssMb(pid) ?? 0) : null;
  const sampler = target?.admin
    ? setInterval(() => {
        const v = rssMb(pid);
        if (v !== null && v > maxRss) maxRss = v;
      }, 100)
    : null;
  const code = await new Promise((done) => child.once('exit', done));
  if (sampler) clearInterval(sampler);
  if (code !== 0) throw new Error(`the load generator failed (${code}): ${err()}`);
  const ticks1 = machineTicks();
  const r = JSON.parse(out().trim().split('\n').pop());
  const result = { ...r, rps: r.total / r.duration, rss: maxRss, cpuPerReq: null, pgPerReq: null };
  // How much of the machine (all cores) was busy during the run, and the load generator's CPU per request.
  result.busy =
    ticks0 && ticks1 && ticks1.total > ticks0.total
      ? (ticks1.busy - ticks0.busy) / (ticks1.total - ticks0.total)
      : null;
  result.loadPerReq = r.total > 0 ? (r.cpuMs * 1000) / r.total : null;
  if (target && r.total > 0) {
    result.cpuPerReq = ((cpuMs(pid) - cpu0) * 1000) / r.total;
    if (pg0) {
      let pgMs = 0;
      for (const [p, ms] of await backendCpu(target.admin)) pgMs += ms - (pg0.get(p) ?? 0);
      result.pgPerReq = (pgMs * 1000) / r.total;
    }
  }
  return result;
}

/** A case's load run; the revoke case also revokes (and probes) keys while it runs. */
async function runCase(name, options, target, ctx) {
  if (name !== 'revoke-under-load') return load(options, target);
  const [r, revoked] = await Promise.all([load(options, target), revokeDuring(ctx, options.duration)]);
  return { ...r, ...revoked };
}

const bearer = (tokens) => tokens.map((t) => ({ authorization: `Bearer ${t}` }));

function caseRequest(name, ctx) {
  const { keys, sessions, orgId } = ctx.seed;
  switch (name) {
    case 'me-key':
      return { url: `${ctx.service.url}/me`, headersPerClient: bearer(keys) };
    case 'me-session':
      return { url: `${ctx.service.url}/me`, headersPerClient: bearer(sessions) };
    case 'usage-key':
      return { url: `${ctx.service.url}/usage`, headersPerClient: bearer(keys) };
    case 'me-key-1000':
    case 'revoke-under-load':
      return { url: `${ctx.service.url}/me`, headersPerRequest: bearer(ctx.seed.manyKeys) };
    case 'me-key-1000-limited':
      return { url: `${ctx.service.url}/me`, headersPerRequest: bearer(ctx.seed.limitedKeys) };
    case 'me-key-1000-credits':
      return { url: `${ctx.service.url}/me`, headersPerRequest: bearer(ctx.seed.creditedKeys) };
    case 'me-session-50':
      return { url: `${ctx.service.url}/me`, headersPerRequest: bearer(ctx.seed.manySessions) };
    case 'mint-session':
      return {
        url: `${ctx.service.url}/api-keys`,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        headersPerClient: bearer(sessions),
        body: JSON.stringify({ org_id: orgId, name: 'bench-mint' }),
      };
    default:
      throw new Error(`unknown case ${name}`);
  }
}

const fmt = (n, digits = 0) => (n === null || n === undefined ? '-' : n.toFixed(digits));
// What the non-2xx answers were, when there were any: their statuses, client errors and timeouts.
const notOk = (r) => {
  if (r.non2xx + r.errors + r.timeouts === 0) return '';
  const statuses = Object.entries(r.statusCodes ?? {})
    .filter(([code]) => !code.startsWith('2'))
    .map(([code, { count }]) => `${code}×${count}`);
  return ` (${[...statuses, r.errors ? `errors×${r.errors}` : '', r.timeouts ? `timeouts×${r.timeouts}` : ''].filter(Boolean).join(' ')})`;
};
/** A run's machine-busy fraction as a percentage, '-' where /proc/stat was not readable. */
const busyPct = (busy) => (busy === null ? '-' : fmt(busy * 100));

function table(
  rows,
  head = ['case', 'req/s', 'p99 ms', 'non-2xx', 'RSS MB', 'CPU µs/req', 'PG µs/req', 'ratio', 'target', 'result'],
) {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (cells) => `| ${cells.map((c, i) => String(c).padEnd(widths[i])).join(' | ')} |`;
  return [line(head), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n');
}

async function main() {
  const requested = (
    process.env.BENCH_CASES ? process.env.BENCH_CASES.split(',') : [...Object.keys(TARGETS), 'charging']
  ).map((s) => s.trim());
  // 'charging' is the group of the charging cases (runCharging, below), run after the others.
  const charging = requested.includes('charging');
  const cases = requested.filter((c) => c !== 'charging');
  for (const c of cases)
    if (!(c in TARGETS)) throw new Error(`unknown case ${c}; known: ${Object.keys(TARGETS).join(', ')}`);
  if (!existsSync(join(root, 'dist', 'main.js'))) throw new Error('dist/main.js is missing: run `npm run build` first');

  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${dbName}`);
  dropDatabase = async () => {
    dropDatabase = async () => {};
    await Promise.all([...children].map(stop));
    await admin
      .query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`)
      .catch((e) => process.stderr.write(`could not drop ${dbName}: ${e.message}\n`));
    await admin.end();
  };
  const databaseUrl = withDatabase(ADMIN_URL, dbName);
  const ctx = {};
  let failed = false;
  try {
    ctx.bare = await startBare();
    // The ceiling: an empty Nest-on-Fastify route, with the service's Node flags.
    ctx.ceiling = await startBare('nest-empty-server.mjs', SERVICE_NODE_FLAGS.split(/\s+/).filter(Boolean));
    ctx.service = await startService(databaseUrl);
    ctx.seed = await seed(databaseUrl, ctx.service.url);
    const target = { pid: ctx.service.child.pid, admin };
    const base = { connections: CONNECTIONS };

    process.stderr.write(
      `bench: ${cpus().length} CPU(s) ${cpus()[0]?.model ?? ''}, node ${process.version}, ` +
        `${PIN ? 'service and baseline on CPU 0, load on CPU 1' : 'no pinning (taskset missing or one CPU)'}, ` +
        `${CONNECTIONS} connections, ${USERS} user(s)/key(s)/session(s), ${DURATION} s per run, ${ROUNDS} rounds\n`,
    );
    const busy = loadavg()[0];
    if (busy > 1) {
      process.stderr.write(
        `bench: the machine is already busy (load average ${busy.toFixed(1)}): expect lower, noisier figures\n`,
      );
    }
    // Warm both servers (JIT, pool connections, prepared statements) before measuring.
    await load({ ...base, url: ctx.bare.url, duration: WARMUP_SECONDS });
    await load({ ...base, url: `${ctx.ceiling.url}/me`, duration: WARMUP_SECONDS });
    // The revoke case's warm-up runs long enough to revoke (revokeDuring leaves the first and the
    // last second of a run alone), so that the first measured round does not take the revoke
    // path's first calls (its code cold, its statements not yet prepared).
    for (const c of cases) {
      const duration = c === 'revoke-under-load' ? WARMUP_SECONDS + 2 : WARMUP_SECONDS;
      await runCase(c, { ...base, ...caseRequest(c, ctx), duration }, target, ctx);
    }

    const runs = { baseline: [], ceiling: [] };
    for (const c of cases) runs[c] = [];
    // Every measured run is paired with a run of the bare server just before it, and its ratio is
    // taken to that run: this machine's speed drifts by up to 2× over tens of seconds, and a case
    // measured a minute after its baseline took the drift as its own.
    const bareRun = async (round) => {
      const b = await load(
        { ...base, url: ctx.bare.url, duration: DURATION },
        { pid: ctx.bare.child.pid, admin: null },
      );
      runs.baseline.push(b);
      process.stderr.write(
        `  round ${round} baseline      ${fmt(b.rps)} req/s  p99 ${b.p99} ms  CPU ${fmt(b.cpuPerReq)} µs/req\n`,
      );
      return b.rps;
    };
    for (let round = 1; round <= ROUNDS; round++) {
      const eBase = await bareRun(round);
      const e = await load(
        { ...base, url: `${ctx.ceiling.url}/me`, duration: DURATION },
        { pid: ctx.ceiling.child.pid, admin: null },
      );
      runs.ceiling.push({ ...e, pairedRatio: e.rps / eBase });
      process.stderr.write(
        `  round ${round} empty Nest    ${fmt(e.rps)} req/s  p99 ${e.p99} ms  CPU ${fmt(e.cpuPerReq)} µs/req\n`,
      );
      // Each case's run is bracketed by runs of the bare server, and its ratio is taken to their
      // mean. A run across which the bare server moved by more than BENCH_DRIFT (the machine's
      // speed changed during it) measured the machine, not the service: it is run again, at most
      // MAX_RERUNS times (the last one counts), and the table says how many were.
      let before = await bareRun(round);
      for (const c of cases) {
        let r;
        for (let attempt = 0; ; attempt++) {
          r = await runCase(c, { ...base, ...caseRequest(c, ctx), duration: DURATION }, target, ctx);
          const after = await bareRun(round);
          const drift = Math.abs(after - before) / Math.max(before, after);
          r.pairedRatio = r.rps / ((before + after) / 2);
          before = after;
          if (drift <= DRIFT || attempt === MAX_RERUNS) break;
          reruns++;
          process.stderr.write(
            `  round ${round} ${c.padEnd(13)} ${fmt(r.rps)} req/s: the bare server moved ${(drift * 100).toFixed(0)} % across it; run again\n`,
          );
        }
        runs[c].push(r);
        process.stderr.write(
          `  round ${round} ${c.padEnd(13)} ${fmt(r.rps)} req/s  p99 ${r.p99} ms  non-2xx ${r.non2xx + r.errors + r.timeouts}${notOk(r)}  RSS ${fmt(r.rss)} MB  CPU ${fmt(r.cpuPerReq)} µs/req + PostgreSQL ${fmt(r.pgPerReq)} µs/req, load ${fmt(r.loadPerReq)}, machine busy ${busyPct(r.busy)} %${r.revokes ? `  revoke p50 ${fmt(r.revokeP50, 1)} p99 ${fmt(r.revokeP99, 1)} max ${fmt(r.revokeMax, 1)} ms, accepted after 204: ${r.acceptedAfter}/${r.revokes}` : ''}\n`,
        );
      }
    }

    const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const baseRps = mean(runs.baseline.map((r) => r.rps));
    const rows = [
      [
        'baseline (node:http)',
        fmt(baseRps),
        fmt(Math.max(...runs.baseline.map((r) => r.p99))),
        runs.baseline.reduce((a, r) => a + r.non2xx + r.errors + r.timeouts, 0),
        '-',
        fmt(mean(runs.baseline.map((r) => r.cpuPerReq))),
        '-',
        '1.00',
        '',
        '',
      ],
    ];
    const ceilingRps = mean(runs.ceiling.map((r) => r.rps));
    rows.push([
      'ceiling (empty Nest route)',
      fmt(ceilingRps),
      fmt(Math.max(...runs.ceiling.map((r) => r.p99))),
      runs.ceiling.reduce((a, r) => a + r.non2xx + r.errors + r.timeouts, 0),
      '-',
      fmt(mean(runs.ceiling.map((r) => r.cpuPerReq))),
      '-',
      mean(runs.ceiling.map((r) => r.pairedRatio)).toFixed(2),
      'reference: Nest 12 on Fastify, no guard, no database',
      '',
    ]);
    for (const c of cases) {
      const rs = runs[c];
      const rps = mean(rs.map((r) => r.rps));
      const p99 = Math.max(...rs.map((r) => r.p99));
      const bad = rs.reduce((a, r) => a + r.non2xx + r.errors + r.timeouts, 0);
      const rss = Math.max(...rs.map((r) => r.rss ?? 0));
      const ratio = mean(rs.map((r) => r.pairedRatio));
      const t = TARGETS[c];
      const checks = [];
      const wanted = [];
      if (t.ratio !== undefined) {
        wanted.push(`≥ ${t.ratio.toFixed(2)}`);
        checks.push(ratio >= t.ratio);
      }
      if (t.ofCase !== undefined) {
        // Against the named case of the same run (both paired with their own baselines); each
        // round's pair is shown beside the run's figure.
        const of = runs[t.ofCase];
        const share = of ? ratio / mean(of.map((r) => r.pairedRatio)) : NaN;
        const rounds = of ? rs.map((r, i) => (r.pairedRatio / of[i].pairedRatio).toFixed(2)).join(', ') : '';
        wanted.push(
          `≥ ${t.ofRatio.toFixed(2)} of ${t.ofCase} (${of ? `${share.toFixed(2)}; rounds ${rounds}` : 'not run'})`,
        );
        checks.push(of !== undefined && share >= t.ofRatio);
      }
      if (t.p99 !== undefined) {
        wanted.push(`p99 ≤ ${t.p99}`);
        checks.push(p99 <= t.p99);
      }
      if (t.revokeP99 !== undefined) {
        const revokeP99 = Math.max(...rs.map((r) => r.revokeP99 ?? Infinity));
        const accepted = rs.reduce((a, r) => a + r.acceptedAfter, 0);
        const revokes = rs.reduce((a, r) => a + r.revokes, 0);
        wanted.push(
          `revoke p99 ≤ ${t.revokeP99} (${fmt(revokeP99, 1)}; worst run's, ${revokes} revokes)`,
          `0 accepted after 204 (${accepted})`,
        );
        checks.push(revokeP99 <= t.revokeP99, accepted === 0);
      }
      wanted.push(`RSS ≤ ${RSS_LIMIT_MB}`, 'all 2xx');
      checks.push(rss <= RSS_LIMIT_MB, bad === 0);
      const pass = checks.every(Boolean);
      if (!pass) failed = true;
      const cpu = fmt(mean(rs.map((r) => r.cpuPerReq)));
      const pgCpu = fmt(mean(rs.map((r) => r.pgPerReq)));
      rows.push([
        c,
        fmt(rps),
        fmt(p99),
        bad,
        fmt(rss),
        cpu,
        pgCpu,
        ratio.toFixed(2),
        wanted.join(', '),
        pass ? 'PASS' : 'FAIL',
      ]);
    }
    process.stdout.write(`\n${table(rows)}\n\n`);
    process.stdout.write(
      `load average when done: ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}\n`,
    );
    process.stdout.write(
      `req/s: mean of ${ROUNDS} runs of ${DURATION} s; p99: worst run; RSS: the service's peak VmRSS during its runs;\n` +
        `CPU/PG µs/req: CPU time of the server process / of its PostgreSQL backends per request (less sensitive than req/s to other work on the machine, not immune);\n` +
        `ratio: each run's req/s ÷ the mean of the bare server's runs just before and just after it (the empty Nest route's: just before), mean of the ${ROUNDS} rounds;\n` +
        `  runs repeated because the bare server moved by more than ${(DRIFT * 100).toFixed(0)} % across them: ${reruns}\n` +
        `  unpaired (mean req/s ÷ mean baseline req/s): ${cases.map((c) => `${c} ${(mean(runs[c].map((r) => r.rps)) / baseRps).toFixed(2)}`).join(', ')}\n`,
    );
    process.stdout.write(
      `of the ceiling (req/s ÷ the empty Nest route's): ${cases.map((c) => `${c} ${(mean(runs[c].map((r) => r.rps)) / ceilingRps).toFixed(2)}`).join(', ')}\n`,
    );
    if (charging && !(await runCharging(ctx, admin, databaseUrl, baseRps))) failed = true;
  } catch (error) {
    if (ctx.service) process.stderr.write(`service output:\n${ctx.service.logs()}\n`);
    throw error;
  } finally {
    await dropDatabase();
  }
  if (failed && !NO_FAIL) {
    process.stderr.write('bench: at least one target was missed (use --no-fail or BENCH_NO_FAIL=1 to report only)\n');
    process.exitCode = 1;
  }
}

// ---------------------------------------------------------------------------------------------
// Charging through a host route: bench/charge-host.mjs imports the built library and
// declares `GET /host/ask` with @RequireScopes('decisions:read') @Charges('asks'). Cases: every
// connection on one org ("hot") or each on its own org ("spread"), on one host instance and on
// three instances sharing the one PostgreSQL; each compared with GET /me on the same host with
// the same keys, and with the bare server, in the same run.
//
//   BENCH_CHARGE_KEYS          keys per case (default 50): the hot org gets that many members with
//                              a key each, the spread case that many orgs with one member and key
//   USAGE_SYNCHRONOUS_COMMIT   passed to the hosts (on|off, default on)
//   USAGE_CHARGING             passed to the hosts (leased|exact, default leased)
//
// Recording: GET /me and GET /usage with 1,000 keys on the first host, and on a fourth host whose
// verification-outcome and scope-use counters record nothing (BENCH_RECORDING=off), alternated in
// each round. What recording costs is the difference of the two hosts' CPU per request.
const CHARGE_KEYS = Number(process.env.BENCH_CHARGE_KEYS || 50);
const RECORDING_KEYS = 1000;
/** Recording outcomes and scope use costs at most 3 %: recorded CPU per request ≤ 1.03 × unrecorded. */
const RECORDING_CPU_LIMIT = 1.03;
const CHARGE_TARGETS = { perMe: 0.8, hotSpreadX3: 0.9 };
const CHARGE_HEAD = [
  'case',
  'req/s',
  'p99 ms',
  'non-2xx',
  'CPU µs/req',
  'PG µs/req',
  'load µs/req',
  'busy %',
  'ratio',
  'target',
  'result',
];

async function startChargeHost(databaseUrl, cpu = 0, extraEnv = {}) {
  const port = await freePort();
  const env = {
    ...extraEnv,
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    NODE_ENV: 'production',
    DATABASE_URL: databaseUrl,
    SESSION_JWT_SECRET: SESSION_SECRET,
    API_KEY_SECRET,
    USAGE_SYNCHRONOUS_COMMIT: process.env.USAGE_SYNCHRONOUS_COMMIT ?? 'on',
    USAGE_CHARGING: process.env.USAGE_CHARGING ?? 'leased',
    HOST: '127.0.0.1',
    PORT: String(port),
  };
  const flags = PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`] : [];
  flags.push(...(process.env.BENCH_NODE_FLAGS ?? SERVICE_NODE_FLAGS).split(/\s+/).filter(Boolean));
  const child = start(cpu, [process.execPath, ...flags, join(root, 'bench', 'charge-host.mjs')], env);
  const out = collect(child.stdout);
  const err = collect(child.stderr);
  if (process.env.BENCH_VERBOSE) child.stderr.pipe(process.stderr);
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the charge host exited during start:\n${out()}\n${err()}`);
    try {
      if ((await fetch(`${url}/me`)).status === 401) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`the charge host did not start within 60 s:\n${out()}\n${err()}`);
    await sleep(200);
  }
  return { child, url };
}

/** Keys written straight into the database the way minting writes them (the built key format and keyed hash). */
async function seedCharging(databaseUrl) {
  const { generateApiKey, hashApiKey } = await import(
    pathToFileURL(join(root, 'dist', 'auth', 'api-key-format.js')).href
  );
  const secret = createSecretKey(Buffer.from(API_KEY_SECRET));
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const member = async (orgId, i) => {
      const user = await client.query(`INSERT INTO users (email) VALUES ($1) RETURNING id`, [
        `charge-${randomBytes(6).toString('hex')}-${i}@example.com`,
      ]);
      await client.query(`INSERT INTO memberships (org_id, user_id, role) VALUES ($1, $2, 'member')`, [
        orgId,
        user.rows[0].id,
      ]);
      const k = generateApiKey();
      await client.query(
        `INSERT INTO api_keys (user_id, org_id, name, lookup, last4, key_hash, scopes) VALUES ($1, $2, 'bench', $3, $4, $5, $6)`,
        [user.rows[0].id, orgId, k.lookup, k.last4, hashApiKey(secret, k.key), ['decisions:read']],
      );
      return k.key;
    };
    const org = async () =>
      (await client.query(`INSERT INTO orgs (name, plan) VALUES ('Charge bench', 'pro') RETURNING id`)).rows[0].id;
    const hotOrg = await org();
    const hot = [];
    for (let i = 0; i < CHARGE_KEYS; i++) hot.push(await member(hotOrg, i));
    const spread = [];
    for (let i = 0; i < CHARGE_KEYS; i++) spread.push(await member(await org(), i));
    // The recording cases: 1,000 keys, 20 to an org.
    const many = [];
    let manyOrg = null;
    for (let i = 0; i < RECORDING_KEYS; i++) {
      if (i % 20 === 0) manyOrg = await org();
      many.push(await member(manyOrg, i));
    }
    return { hotOrg, hot, spread, many };
  } finally {
    await client.end();
  }
}

/** One load spread evenly over several instances: a generator per instance, run together, figures summed. */
async function loadSpread(urls, options) {
  const per = Math.max(1, Math.round(options.connections / urls.length));
  const runs = await Promise.all(urls.map((url) => load({ ...options, url, connections: per })));
  const total = runs.reduce((s, r) => s + r.total, 0);
  const duration = Math.max(...runs.map((r) => r.duration));
  return {
    total,
    duration,
    rps: total / duration,
    p99: Math.max(...runs.map((r) => r.p99)),
    non2xx: runs.reduce((s, r) => s + r.non2xx, 0),
    errors: runs.reduce((s, r) => s + r.errors, 0),
    timeouts: runs.reduce((s, r) => s + r.timeouts, 0),
    cpuPerReq: null,
    pgPerReq: null,
    loadPerReq: total > 0 ? (runs.reduce((s, r) => s + r.cpuMs, 0) * 1000) / total : null,
    busy: runs.some((r) => r.busy === null) ? null : runs.reduce((s, r) => s + r.busy, 0) / runs.length,
  };
}

async function runCharging(ctx, admin, databaseUrl, baseRps) {
  const hosts = [
    await startChargeHost(databaseUrl, 0),
    await startChargeHost(databaseUrl, 0),
    await startChargeHost(databaseUrl, 0),
  ];
  const unrecorded = await startChargeHost(databaseUrl, 0, { BENCH_RECORDING: 'off' });
  const keys = await seedCharging(databaseUrl);
  const target = { pid: hosts[0].child.pid, admin };
  const unrecordedTarget = { pid: unrecorded.child.pid, admin };
  const many = (url, path, on) =>
    load({ ...base, url: `${url}${path}`, headersPerClient: bearer(keys.many), duration: DURATION }, on);
  const base = { connections: CONNECTIONS };
  const cases = {
    'me-hot': () =>
      load({ ...base, url: `${hosts[0].url}/me`, headersPerClient: bearer(keys.hot), duration: DURATION }, target),
    'charge-hot': () =>
      load(
        { ...base, url: `${hosts[0].url}/host/ask`, headersPerClient: bearer(keys.hot), duration: DURATION },
        target,
      ),
    'me-spread': () =>
      load({ ...base, url: `${hosts[0].url}/me`, headersPerClient: bearer(keys.spread), duration: DURATION }, target),
    'charge-spread': () =>
      load(
        { ...base, url: `${hosts[0].url}/host/ask`, headersPerClient: bearer(keys.spread), duration: DURATION },
        target,
      ),
    'charge-hot-x3': () =>
      loadSpread(
        hosts.map((h) => `${h.url}/host/ask`),
        { ...base, headersPerClient: bearer(keys.hot), duration: DURATION },
      ),
    'charge-spread-x3': () =>
      loadSpread(
        hosts.map((h) => `${h.url}/host/ask`),
        { ...base, headersPerClient: bearer(keys.spread), duration: DURATION },
      ),
    'me-1000': () => many(hosts[0].url, '/me', target),
    'me-1000-unrecorded': () => many(unrecorded.url, '/me', unrecordedTarget),
    'usage-1000': () => many(hosts[0].url, '/usage', target),
    'usage-1000-unrecorded': () => many(unrecorded.url, '/usage', unrecordedTarget),
  };
  process.stderr.write(
    `bench: charging through a host route, ${CHARGE_KEYS} keys per case, synchronous_commit ${process.env.USAGE_SYNCHRONOUS_COMMIT ?? 'on'}, ${process.env.USAGE_CHARGING ?? 'leased'} charging\n`,
  );
  for (const h of hosts)
    await load({ ...base, url: `${h.url}/host/ask`, headersPerClient: bearer(keys.spread), duration: WARMUP_SECONDS });
  await load({ ...base, url: `${hosts[0].url}/me`, headersPerClient: bearer(keys.hot), duration: WARMUP_SECONDS });
  for (const h of [hosts[0], unrecorded])
    for (const path of ['/me', '/usage'])
      await load({ ...base, url: `${h.url}${path}`, headersPerClient: bearer(keys.many), duration: WARMUP_SECONDS });
  const runs = Object.fromEntries(Object.keys(cases).map((c) => [c, []]));
  const bases = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const b = await load({ ...base, url: ctx.bare.url, duration: DURATION });
    bases.push(b.rps);
    for (const [name, run] of Object.entries(cases)) {
      const r = await run();
      runs[name].push(r);
      process.stderr.write(
        `  round ${round} ${name.padEnd(21)} ${fmt(r.rps)} req/s  p99 ${r.p99} ms  non-2xx ${r.non2xx + r.errors + r.timeouts}  machine busy ${busyPct(r.busy)} %\n`,
      );
    }
  }
  const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const bare = mean([baseRps, ...bases]);
  const rps = Object.fromEntries(Object.entries(runs).map(([c, rs]) => [c, mean(rs.map((r) => r.rps))]));
  const me = { hot: rps['me-hot'], spread: rps['me-spread'] };
  const rows = [];
  let pass = true;
  for (const [name, rs] of Object.entries(runs)) {
    const bad = rs.reduce((a, r) => a + r.non2xx + r.errors + r.timeouts, 0);
    const spreadCase = name.includes('spread');
    const perMe = name.startsWith('charge') ? rps[name] / (spreadCase ? me.spread : me.hot) : null;
    let wanted = 'all 2xx';
    let ok = bad === 0;
    const pair = runs[`${name}-unrecorded`];
    let recordingCost = '';
    if (pair) {
      // This row is the recorded case; its pair ran on the fourth host in the same rounds.
      const cpu = mean(rs.map((r) => r.cpuPerReq ?? NaN)) / mean(pair.map((r) => r.cpuPerReq ?? NaN));
      recordingCost = `CPU ${cpu.toFixed(3)}×, req/s ${(rps[name] / rps[`${name}-unrecorded`]).toFixed(3)}× of unrecorded; `;
      wanted = `CPU ≤ ${RECORDING_CPU_LIMIT}× of unrecorded, all 2xx`;
      ok &&= cpu <= RECORDING_CPU_LIMIT;
    }
    if (perMe !== null && !name.endsWith('x3')) {
      wanted = `≥ ${CHARGE_TARGETS.perMe} of GET /me, all 2xx`;
      ok &&= perMe >= CHARGE_TARGETS.perMe;
    }
    if (!ok) pass = false;
    rows.push([
      name,
      fmt(rps[name]),
      fmt(Math.max(...rs.map((r) => r.p99))),
      bad,
      rs.some((r) => r.cpuPerReq === null) ? '-' : fmt(mean(rs.map((r) => r.cpuPerReq))),
      rs.some((r) => r.pgPerReq === null) ? '-' : fmt(mean(rs.map((r) => r.pgPerReq))),
      fmt(mean(rs.map((r) => r.loadPerReq))),
      busyPct(rs.some((r) => r.busy === null) ? null : mean(rs.map((r) => r.busy))),
      (rps[name] / bare).toFixed(2),
      `${perMe === null ? '' : `${perMe.toFixed(2)} of /me; `}${recordingCost}${wanted}`,
      ok ? 'PASS' : 'FAIL',
    ]);
  }
  const hotSpread1 = rps['charge-hot'] / rps['charge-spread'];
  const hotSpread3 = rps['charge-hot-x3'] / rps['charge-spread-x3'];
  const x3ok = hotSpread3 >= CHARGE_TARGETS.hotSpreadX3;
  if (!x3ok) pass = false;
  process.stdout.write(
    `\nCharging through a host route (@Charges('asks')), bare server ${fmt(bare)} req/s in this run:\n\n${table(rows, CHARGE_HEAD)}\n\n`,
  );
  process.stdout.write(
    `hot/spread, one instance: ${hotSpread1.toFixed(2)}; three instances: ${hotSpread3.toFixed(2)} (target ≥ ${CHARGE_TARGETS.hotSpreadX3}: ${x3ok ? 'PASS' : 'FAIL'})\n` +
      `ratio: req/s ÷ the bare server's; "of /me": charges/s ÷ GET /me on the same host with the same keys (hot or spread).\n` +
      `CPU/PG µs/req: of the first host instance and the database (one-instance cases only); load µs/req: of the load generator(s);\n` +
      `busy %: the whole machine (all cores, /proc/stat) during the run; well under 100 means the case waits (round trips, locks) rather than runs out of CPU.\n`,
  );
  await Promise.all([...hosts, unrecorded].map((h) => stop(h.child)));
  return pass;
}

const dbName = `kui_bench_${randomBytes(4).toString('hex')}`;
let dropDatabase = async () => {};

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    process.stderr.write(`bench: interrupted; stopping the servers and dropping ${dbName}\n`);
    void dropDatabase().finally(() => process.exit(130));
  });
}

main().catch((error) => {
  process.stderr.write(`bench: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 2;
});
