// The high-availability cluster of `npm run test:ha`, on this machine, from Debian's packages:
// etcd, two PostgreSQL 15 nodes under Patroni (synchronous_mode, failsafe_mode), HAProxy routing
// to the primary by Patroni's REST health check (/primary), and PgBouncer in transaction mode in
// front of HAProxy. Everything lives in one directory under /tmp owned by `postgres` (PostgreSQL
// and PgBouncer refuse to run as root), listens on 127.0.0.1 only, on ports below 32768, and is
// stopped and removed by `stop()`.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export const PG_BIN = process.env.HA_PG_BIN ?? '/usr/lib/postgresql/15/bin';
export const PORTS = {
  etcdClient: 12379,
  etcdPeer: 12380,
  pg: [15432, 15433],
  rest: [18008, 18009],
  haproxy: 15000,
  pgbouncer: 16432,
  /** The machine's own PostgreSQL, behind the same PgBouncer, for the end-to-end tests. */
  machinePg: Number(process.env.HA_MACHINE_PG_PORT ?? 5432),
};
export const NODES = ['node1', 'node2'];
export const DB = 'kui_ha';
/** The TTL of Patroni's leader key: how long a lost primary's node keeps the lock. */
export const TTL_SECONDS = 10;
const PACKAGES = ['patroni', 'etcd-server', 'etcd-client', 'haproxy', 'pgbouncer'];
const BINARIES = ['patroni', 'patronictl', 'etcd', 'haproxy', 'pgbouncer'];

// Debian installs haproxy and pgbouncer in /usr/sbin, which a non-login shell's PATH may lack:
// this script and everything it starts look there too.
process.env.PATH = [
  ...new Set([...(process.env.PATH ?? '').split(':').filter(Boolean), '/usr/local/sbin', '/usr/sbin', '/sbin']),
].join(':');

const has = (bin) => spawnSync('sh', ['-c', `command -v ${bin}`]).status === 0;

/** Debian's packages, installed when missing (as .ci/run installs Chromium): never a download of our own. */
export function ensurePackages(log) {
  const missing = BINARIES.filter((b) => !has(b));
  if (missing.length === 0) return;
  if (process.getuid?.() !== 0)
    throw new Error(`missing ${missing.join(', ')}: run as root, or apt-get install -y ${PACKAGES.join(' ')}`);
  log(`installing ${PACKAGES.join(' ')} from Debian (missing: ${missing.join(', ')})`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
  execFileSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...PACKAGES], { stdio: 'ignore', env });
  // Debian may start the packaged services on their default ports; ours use other ports, and
  // nothing of theirs is touched.
}

function portFree(port) {
  return new Promise((ok) => {
    const s = createConnection({ host: '127.0.0.1', port });
    s.once('connect', () => (s.destroy(), ok(false)));
    s.once('error', () => ok(true));
  });
}

export async function waitFor(what, fn, timeoutMs = 60_000, everyMs = 200) {
  const until = Date.now() + timeoutMs;
  let last;
  while (Date.now() < until) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (error) {
      last = error;
    }
    await sleep(everyMs);
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${last.message}` : ''}`);
}

export async function restGet(port, path) {
  try {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(1000) });
    await res.arrayBuffer();
    return res.status;
  } catch {
    return 0;
  }
}

export class Cluster {
  constructor(log) {
    this.log = log;
    this.children = new Map(); // name -> ChildProcess
    this.dir = null;
    this.asRoot = process.getuid?.() === 0;
  }

  /** Runs `cmd` as postgres (when we are root), exec'd in place so the pid is the program's own. */
  spawnAs(name, cmd, args, extraEnv = {}) {
    const [file, argv] = this.asRoot
      ? ['setpriv', ['--reuid=postgres', '--regid=postgres', '--init-groups', '--', cmd, ...args]]
      : [cmd, args];
    const out = join(this.dir, `${name}.log`);
    const child = spawn(file, argv, {
      cwd: this.dir,
      env: { PATH: process.env.PATH, HOME: this.dir, LANG: 'C.UTF-8', ...extraEnv },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let text = '';
    const keep = (d) => {
      text += d;
      if (text.length > 200_000) text = text.slice(-100_000);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.on('exit', () => {
      try {
        writeFileSync(out, text);
      } catch {
        // the directory may be gone already
      }
    });
    child.output = () => text;
    this.children.set(name, child);
    return child;
  }

  runAs(cmd, args) {
    const [file, argv] = this.asRoot
      ? ['setpriv', ['--reuid=postgres', '--regid=postgres', '--init-groups', '--', cmd, ...args]]
      : [cmd, args];
    return spawnSync(file, argv, { cwd: this.dir, env: { PATH: process.env.PATH, HOME: this.dir }, encoding: 'utf8' });
  }

  write(file, text) {
    const path = join(this.dir, file);
    writeFileSync(path, text);
    if (this.asRoot) execFileSync('chown', ['postgres:postgres', path]);
    return path;
  }

  async start() {
    for (const port of [PORTS.etcdClient, PORTS.etcdPeer, ...PORTS.pg, ...PORTS.rest, PORTS.haproxy, PORTS.pgbouncer]) {
      if (!(await portFree(port))) throw new Error(`port ${port} on 127.0.0.1 is taken: is another test:ha running?`);
    }
    this.dir = mkdtempSync('/tmp/kui-ha-');
    if (this.asRoot) execFileSync('chown', ['postgres:postgres', this.dir]);
    for (const d of ['etcd', ...NODES]) {
      mkdirSync(join(this.dir, d), { mode: 0o700 });
      if (this.asRoot) chownSync(join(this.dir, d), ...uidGid('postgres'));
    }
    await this.startEtcd();
    for (const [i, node] of NODES.entries()) {
      this.write(`${node}.yml`, patroniConfig(this.dir, node, i));
    }
    const t0 = Date.now();
    this.startPatroni('node1');
    await waitFor(
      'node1 to bootstrap as primary',
      async () => (await restGet(PORTS.rest[0], '/primary')) === 200,
      90_000,
    );
    this.startPatroni('node2');
    await waitFor(
      'node2 to become the synchronous standby',
      async () => (await restGet(PORTS.rest[1], '/sync')) === 200,
      120_000,
    );
    this.log(
      `Patroni cluster up in ${((Date.now() - t0) / 1000).toFixed(1)} s (node1 primary, node2 synchronous standby)`,
    );
    this.write('haproxy.cfg', haproxyConfig());
    this.spawnAs('haproxy', 'haproxy', ['-f', join(this.dir, 'haproxy.cfg'), '-db']);
    this.write('userlist.txt', '"postgres" ""\n');
    this.write('pgbouncer.ini', pgbouncerConfig(this.dir));
    this.spawnAs('pgbouncer', 'pgbouncer', [join(this.dir, 'pgbouncer.ini')]);
    await waitFor(
      'HAProxy and PgBouncer',
      async () => !(await portFree(PORTS.haproxy)) && !(await portFree(PORTS.pgbouncer)),
    );
  }

  async startEtcd() {
    this.spawnAs('etcd', 'etcd', [
      '--name=ha',
      `--data-dir=${join(this.dir, 'etcd')}`,
      `--listen-client-urls=http://127.0.0.1:${PORTS.etcdClient}`,
      `--advertise-client-urls=http://127.0.0.1:${PORTS.etcdClient}`,
      `--listen-peer-urls=http://127.0.0.1:${PORTS.etcdPeer}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${PORTS.etcdPeer}`,
      `--initial-cluster=ha=http://127.0.0.1:${PORTS.etcdPeer}`,
      '--listen-metrics-urls=',
      '--log-level=error',
    ]);
    await waitFor('etcd', async () => (await restGet(PORTS.etcdClient, '/health')) === 200, 30_000);
  }

  async stopEtcd() {
    await this.stopChild('etcd', 'SIGKILL');
  }

  startPatroni(node) {
    return this.spawnAs(node, 'patroni', [join(this.dir, `${node}.yml`)]);
  }

  /** The node whose REST API says it is the primary, or null. */
  async leader() {
    for (const [i, node] of NODES.entries()) if ((await restGet(PORTS.rest[i], '/primary')) === 200) return node;
    return null;
  }

  restPort(node) {
    return PORTS.rest[NODES.indexOf(node)];
  }

  postmasterPid(node) {
    const file = join(this.dir, node, 'postmaster.pid');
    return existsSync(file) ? Number(readFileSync(file, 'utf8').split('\n')[0]) : null;
  }

  /** The node lost: its Patroni agent and its postmaster, both `kill -9`, at once. */
  killNode(node) {
    const pm = this.postmasterPid(node);
    const agent = this.children.get(node);
    if (!pm || !agent) throw new Error(`no postmaster or agent for ${node}`);
    process.kill(agent.pid, 'SIGKILL');
    process.kill(pm, 'SIGKILL');
    return pm;
  }

  patronictl(args) {
    return this.runAs('patronictl', ['-c', join(this.dir, 'node1.yml'), ...args]);
  }

  async stopChild(name, signal = 'SIGTERM', waitMs = 10_000) {
    const child = this.children.get(name);
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((ok) => child.once('exit', ok));
    child.kill(signal);
    const done = await Promise.race([exited.then(() => true), sleep(waitMs).then(() => false)]);
    if (!done) {
      child.kill('SIGKILL');
      await exited;
    }
  }

  /** Stops everything this cluster started and removes its directory (also after a failure). */
  async stop() {
    if (!this.dir) return;
    await this.stopChild('pgbouncer', 'SIGINT', 3000);
    await this.stopChild('haproxy', 'SIGTERM', 3000);
    await Promise.all(NODES.map((n) => this.stopChild(n, 'SIGTERM', 15_000)));
    // A postmaster whose agent was killed (or that outlived it) is stopped by hand.
    for (const node of NODES) {
      if (existsSync(join(this.dir, node, 'postmaster.pid')))
        this.runAs(join(PG_BIN, 'pg_ctl'), ['stop', '-D', join(this.dir, node), '-m', 'immediate', '-w', '-t', '10']);
    }
    await this.stopChild('etcd', 'SIGTERM', 5000);
    for (const child of this.children.values())
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    if (process.env.HA_KEEP_DIR) this.log(`left ${this.dir} (HA_KEEP_DIR)`);
    else rmSync(this.dir, { recursive: true, force: true });
    this.dir = null;
  }
}

function uidGid(user) {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${user}:`));
  if (!line) throw new Error(`no user ${user}`);
  const [, , uid, gid] = line.split(':');
  return [Number(uid), Number(gid)];
}

function patroniConfig(dir, node, i) {
  return `scope: kui-ha
name: ${node}
log:
  level: WARNING
restapi:
  listen: 127.0.0.1:${PORTS.rest[i]}
  connect_address: 127.0.0.1:${PORTS.rest[i]}
etcd3:
  hosts: 127.0.0.1:${PORTS.etcdClient}
watchdog:
  mode: off
bootstrap:
  dcs:
    ttl: ${TTL_SECONDS}
    loop_wait: 1
    retry_timeout: 4
    maximum_lag_on_failover: 1048576
    synchronous_mode: true
    # The primary keeps its role while etcd is down as long as it reaches every member (Patroni >= 3.0).
    failsafe_mode: true
    postgresql:
      use_pg_rewind: true
      parameters:
        wal_level: replica
        hot_standby: 'on'
        wal_log_hints: 'on'
        max_wal_senders: 5
        max_replication_slots: 5
        max_connections: 100
        wal_keep_size: 64MB
  initdb:
    - encoding: UTF8
    - auth-local: trust
    - auth-host: trust
postgresql:
  listen: 127.0.0.1:${PORTS.pg[i]}
  connect_address: 127.0.0.1:${PORTS.pg[i]}
  data_dir: ${join(dir, node)}
  bin_dir: ${PG_BIN}
  pgpass: ${join(dir, `pgpass-${node}`)}
  authentication:
    superuser: { username: postgres, password: postgres }
    replication: { username: replicator, password: replicator }
    rewind: { username: postgres, password: postgres }
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication replicator 127.0.0.1/32 trust
  parameters:
    unix_socket_directories: '${dir}'
    shared_buffers: 32MB
    # The test kills postmasters, never the machine: the page cache survives, so fsync buys nothing here.
    fsync: 'off'
    max_connections: 100
`;
}

function haproxyConfig() {
  const servers = NODES.map((n, i) => `  server ${n} 127.0.0.1:${PORTS.pg[i]} check port ${PORTS.rest[i]}`).join('\n');
  return `global
  maxconn 400
defaults
  mode tcp
  timeout connect 2s
  timeout client 30m
  timeout server 30m
  timeout check 1s
listen primary
  bind 127.0.0.1:${PORTS.haproxy}
  option httpchk GET /primary
  http-check expect status 200
  default-server inter 500ms fastinter 250ms fall 2 rise 1 on-marked-down shutdown-sessions
${servers}
`;
}

function pgbouncerConfig(dir) {
  // Transaction mode, and nothing that would make PgBouncer ignore startup parameters: the
  // service must not send any. The cluster's database goes through HAProxy; every other name to
  // the machine's own PostgreSQL (the end-to-end tests' databases).
  return `[databases]
${DB} = host=127.0.0.1 port=${PORTS.haproxy} dbname=${DB}
* = host=127.0.0.1 port=${PORTS.machinePg}
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = ${PORTS.pgbouncer}
unix_socket_dir =
auth_type = trust
auth_file = ${join(dir, 'userlist.txt')}
pool_mode = transaction
max_client_conn = 400
default_pool_size = 30
server_connect_timeout = 2
server_login_retry = 1
query_wait_timeout = 10
logfile = ${join(dir, 'pgbouncer.log')}
`;
}
