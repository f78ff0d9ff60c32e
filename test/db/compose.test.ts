import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { buildAppConfig, EnvironmentVariables, loadEnvironment } from '../../src/config/app-config.js';

// No Docker engine runs here: these tests read the deployment files the way compose and
// BuildKit would, and check what they promise.
const root = join(import.meta.dirname, '..', '..');
const read = (file: string) => readFileSync(join(root, file), 'utf8');

interface Service {
  image?: string;
  build?: unknown;
  command?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  ports?: string[];
  expose?: string[];
  healthcheck?: { test: string[] };
  depends_on?: Record<string, { condition: string }>;
  deploy?: { replicas?: number };
  restart?: string;
}

const compose = parse(read('docker-compose.yml'), { merge: true }) as {
  services: Record<string, Service>;
  volumes: Record<string, unknown>;
};
const { postgres, migrate, api, lb } = compose.services;

/** Compose's variable interpolation: ${VAR}, ${VAR:-default}, ${VAR:?error}, $$. */
function interpolate(value: string, env: Record<string, string>): string {
  return value.replace(
    /\$\$|\$\{(\w+)(?:(:?[-?])([^}]*))?\}/g,
    (match, name: string | undefined, op: string | undefined, arg: string) => {
      if (match === '$$') return '$';
      const set = env[name!];
      if (op === ':?' && !set) throw new Error(`${name}: ${arg}`);
      if (op === ':-' && !set) return arg;
      return set ?? '';
    },
  );
}

const interpolated = (service: Service, env: Record<string, string>) =>
  Object.fromEntries(Object.entries(service.environment ?? {}).map(([k, v]) => [k, interpolate(String(v), env)]));

const SECRETS = {
  POSTGRES_PASSWORD: 'pg-password-0123456789',
  SESSION_JWT_SECRET: 's'.repeat(48),
  API_KEY_SECRET: 'k'.repeat(48),
};

describe('docker-compose.yml', () => {
  it('runs PostgreSQL with a named volume and a pg_isready healthcheck', () => {
    expect(postgres.image).toMatch(/^postgres:\d+/);
    expect(postgres.volumes).toContain('pgdata:/var/lib/postgresql/data');
    expect(Object.keys(compose.volumes)).toContain('pgdata');
    expect(postgres.healthcheck!.test.join(' ')).toContain('pg_isready');
  });

  it('migrates once, with a one-shot job that waits for a healthy database', () => {
    expect(migrate.command).toEqual(['node', 'dist/database/migrate-cli.js']);
    expect(existsSync(join(root, 'src/database/migrate-cli.ts'))).toBe(true);
    expect(migrate.depends_on).toEqual({ postgres: { condition: 'service_healthy' } });
    expect(migrate.restart).toBe('no');
    expect(migrate.environment!.DATABASE_URL).toBe(api.environment!.DATABASE_URL);
  });

  it('runs two replicas of the same image that never migrate and start only after the migration succeeded', () => {
    expect(api.deploy?.replicas).toBe(2);
    expect(api.image).toBe(migrate.image);
    expect(api.environment!.DB_MIGRATE).toBe('false');
    expect(api.environment!.NODE_ENV).toBe('production');
    expect(api.depends_on).toEqual({
      postgres: { condition: 'service_healthy' },
      migrate: { condition: 'service_completed_successfully' },
    });
    expect(api.healthcheck!.test.join(' ')).toContain('/health/live');
    // Two replicas cannot share a published port: only the load balancer publishes one.
    expect(api.ports).toBeUndefined();
  });

  it('puts the replicas behind one published port on an nginx load balancer', () => {
    expect(lb.image).toMatch(/^nginx:/);
    expect(lb.ports).toHaveLength(1);
    expect(lb.depends_on).toEqual({ api: { condition: 'service_healthy' } });
    const mount = lb.volumes!.find((v) => v.endsWith(':/etc/nginx/conf.d/default.conf:ro'))!;
    const conf = read(mount.split(':')[0]);
    expect(conf).toMatch(/server api:3000 resolve;/);
    expect(conf).toMatch(/proxy_pass http:\/\/api;/);
    expect(conf).toMatch(/proxy_set_header X-Forwarded-For \$remote_addr;/);
  });

  it('requires every secret with ${VAR:?}, never with a default', () => {
    const text = read('docker-compose.yml');
    for (const name of Object.keys(SECRETS)) {
      expect(text).toMatch(new RegExp(`\\$\\{${name}:\\?[^}]+\\}`));
      expect(text).not.toMatch(new RegExp(`\\$\\{${name}:?-`));
    }
    for (const name of Object.keys(SECRETS)) {
      const { [name as keyof typeof SECRETS]: _missing, ...rest } = SECRETS;
      expect(() => [postgres, api].forEach((s) => interpolated(s, rest))).toThrow(name);
    }
  });

  it('gives the replicas an environment the service itself accepts', () => {
    const env = interpolated(api, SECRETS);
    const known = new Set(Object.keys(new EnvironmentVariables()));
    for (const name of Object.keys(env)) expect(known, `${name} is not a setting of the service`).toContain(name);
    const config = buildAppConfig(loadEnvironment(env));
    expect(config.production).toBe(true);
    expect(config.embedded).toBe(false);
    expect(config.env.DB_MIGRATE).toBe(false);
    expect(config.env.METRICS_PORT).toBe(9464);
    expect(api.expose).toContain(String(config.env.METRICS_PORT));
    expect(new URL(config.env.DATABASE_URL!).host).toBe('postgres:5432');
  });
});

describe('Dockerfile', () => {
  const dockerfile = read('Dockerfile');
  const stages = dockerfile.split(/^FROM /m).slice(1);
  const runtime = stages.at(-1)!;

  it('builds in one stage with the dev dependencies and runs from another with production ones only', () => {
    expect(stages).toHaveLength(2);
    expect(stages[0]).toMatch(/^\S+ AS build\n/);
    expect(stages[0]).toMatch(/RUN npm ci\b/);
    expect(stages[0]).toMatch(/RUN npm run build/);
    expect(runtime).toMatch(/^\S+ AS runtime\n/);
    expect(runtime).toMatch(/RUN npm ci --omit=dev/);
    expect(runtime).toMatch(/COPY --from=build \/app\/dist \.\/dist/);
    expect(runtime).toMatch(/NODE_ENV=production/);
    // The account page is bundled into dist/account-page by the build (read from disk at start:
    // without it the container would not start), so the build stage needs its sources.
    expect(stages[0]).toMatch(/COPY assets\/account \.\/assets\/account/);
    expect(stages[0]).toMatch(/COPY scripts\/build-account\.mjs/);
  });

  it('starts the service with the same V8 heap settings as npm start', () => {
    const pkg = JSON.parse(read('package.json')) as {
      config: { serviceNodeFlags: string };
      scripts: { start: string };
    };
    const cmd = /^CMD (\[.*\])$/m.exec(runtime)![1];
    const argv = JSON.parse(cmd) as string[];
    expect(argv).toEqual(['node', ...pkg.config.serviceNodeFlags.split(' '), 'dist/main.js']);
    expect(pkg.scripts.start).toContain('$npm_package_config_serviceNodeFlags');
  });

  it('runs Node without allocation-site pretenuring and with a young generation of fixed size, flags this Node accepts as they are', () => {
    const pkg = JSON.parse(read('package.json')) as { config: { serviceNodeFlags: string } };
    const flags = pkg.config.serviceNodeFlags.split(' ');
    // Without it, V8 may pretenure request-path objects and keep finished requests alive until a full GC (README, Performance).
    expect(flags).toContain('--no-allocation-site-pretenuring');
    // A young generation V8 cannot shrink while the service idles: after a shrink, the next burst
    // ran with 1–2 MB semi-spaces for about 20 s (scavenges 5× as often, CPU per request up to 2×).
    const semi = (name: string) => flags.find((f) => f.startsWith(`--${name}-semi-space-size=`))?.split('=')[1];
    expect(semi('min')).toBeDefined();
    expect(semi('min')).toBe(semi('max'));
    // V8 only warns on stderr about a flag it does not know; the process would still start.
    const run = spawnSync(process.execPath, [...flags, '-e', '0'], { encoding: 'utf8' });
    expect(run.status).toBe(0);
    expect(run.stderr).toBe('');
  });

  it('runs as a non-root user with a liveness HEALTHCHECK', () => {
    const users = [...runtime.matchAll(/^USER (\S+)/gm)].map((m) => m[1]);
    expect(users.length).toBeGreaterThan(0);
    expect(['root', '0', '0:0']).not.toContain(users.at(-1));
    expect(runtime).toMatch(/HEALTHCHECK[^\n]*\\\n[^\n]*\/health\/live/);
  });

  it('keeps local build output, dependencies and data out of the build context', () => {
    const ignored = read('.dockerignore')
      .split('\n')
      .map((l) => l.trim());
    for (const entry of ['node_modules', 'dist', '.data', '.git']) expect(ignored).toContain(entry);
  });
});

describe('deploy/ha/compose.yml (high availability: Patroni, HAProxy, PgBouncer, three replicas)', () => {
  const ha = parse(read('deploy/ha/compose.yml'), { merge: true }) as { services: Record<string, Service> };
  const s = ha.services;
  const HA_SECRETS = { ...SECRETS, KUI_PASSWORD: 'kui-password-0123456789' };

  it('runs two Patroni nodes on etcd, in synchronous and failsafe mode', () => {
    expect(s.etcd.image).toMatch(/etcd/);
    for (const node of [s.patroni1, s.patroni2]) {
      expect(node.depends_on).toEqual({ etcd: { condition: 'service_healthy' } });
      expect(node.volumes).toContain('./patroni.yml:/etc/patroni.yml:ro');
    }
    const patroni = parse(read('deploy/ha/patroni.yml')) as {
      etcd3: { hosts: string };
      bootstrap: { dcs: Record<string, unknown>; post_bootstrap: string };
    };
    expect(patroni.etcd3.hosts).toBe('etcd:2379');
    expect(patroni.bootstrap.dcs).toMatchObject({ synchronous_mode: true, failsafe_mode: true });
    expect(read('deploy/ha/Dockerfile.patroni')).toMatch(/apt-get install[^\n]*patroni postgresql-15/);
  });

  it('routes HAProxy to the primary by Patroni /primary, and PgBouncer in transaction mode to HAProxy', () => {
    const haproxy = read('deploy/ha/haproxy.cfg');
    expect(haproxy).toMatch(/option httpchk GET \/primary/);
    expect(haproxy).toMatch(/on-marked-down shutdown-sessions/);
    expect(haproxy).toMatch(/server patroni1 patroni1:5432 check port 8008/);
    const pgbouncer = read('deploy/ha/pgbouncer.ini');
    expect(pgbouncer).toMatch(/^pool_mode = transaction$/m);
    expect(pgbouncer).toMatch(/^kui = host=haproxy port=5000 dbname=kui$/m);
    expect(pgbouncer).not.toMatch(/^ignore_startup_parameters/m);
  });

  it('runs three replicas with DATABASE_URL through PgBouncer and DATABASE_DIRECT_URL through HAProxy, which the service accepts', () => {
    expect(s.api.deploy?.replicas).toBe(3);
    const env = interpolated(s.api, HA_SECRETS);
    const known = new Set([...Object.keys(new EnvironmentVariables()), 'DATABASE_DIRECT_URL']);
    for (const name of Object.keys(env)) expect(known, `${name} is not a setting of the service`).toContain(name);
    const config = buildAppConfig(loadEnvironment(env));
    expect(new URL(config.env.DATABASE_URL!).host).toBe('pgbouncer:6432');
    expect(new URL(config.env.DATABASE_DIRECT_URL!).host).toBe('haproxy:5000');
    expect(config.env.DB_MIGRATE).toBe(false);
    expect(interpolated(s.migrate, HA_SECRETS).DATABASE_DIRECT_URL).toBe(config.env.DATABASE_DIRECT_URL);
    expect(s.api.depends_on).toEqual({ migrate: { condition: 'service_completed_successfully' } });
  });
});
