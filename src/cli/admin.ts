import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { BadRequestException, type INestApplicationContext } from '@nestjs/common';
import { once } from 'node:events';
import { parseArgs } from 'node:util';
import { isPlan, isRole, isUuid, PLANS, ROLES } from '../common/roles.js';
import { buildAppConfig, ConfigError, loadEnvironment } from '../config/app-config.js';
import { fillDevelopmentSecrets } from '../config/dev-secrets.js';
import { openDatabase } from '../database/open-database.js';
import { isMeter, METERS, UnknownOrgError, UsageLimitExceededError } from '../usage/meters.js';
import { UsageExporter } from '../usage/usage-export.js';
import { AdminModule } from './admin.module.js';
import { AdminError, DirectoryAdminService } from './directory-admin.service.js';

const USAGE = `Usage: npm run --silent admin -- <command> [flags]

  org create --name <name> [--plan free|pro]
  org set-plan --org <org-id> --plan free|pro
  user create --email <email> [--id <uuid>]
  member add --org <org-id> --user <user-id> --role owner|admin|member|viewer
  member remove --org <org-id> --user <user-id>
  workspace create --org <org-id> --user <user-id>
  session --user <user-id> [--org <org-id>] [--ttl <seconds>]
  usage record --org <org-id> --meter asks|retrieves|imports|captures [--count <n>]
  usage export --org <org-id> [--from YYYY-MM-DD] [--to YYYY-MM-DD] [--by-key] [--format csv|jsonl]
  audit export --org <org-id> [--since <time>] [--until <time>]

Each command prints one JSON object on stdout (usage export streams CSV or JSON Lines);
errors go to stderr with a non-zero exit.
audit export prints the org's audit events instead, oldest first, one JSON object per line
(JSON Lines), streamed; --since (inclusive) and --until (exclusive) take an RFC 3339 time or a
date (YYYY-MM-DD, UTC midnight). Changes made by these commands in an org are recorded in its
audit log with the operator CLI as actor.`;

class UsageError extends Error {}

type Flags = Record<string, string | undefined>;
/** A command's result is printed as one JSON object; Lines are streamed; null means it wrote its own output. */
type Command = (svc: DirectoryAdminService, f: Flags, app: INestApplicationContext) => Promise<object | Lines | null>;

/** What a streaming command returns: lines written to stdout as they come. */
class Lines {
  constructor(readonly lines: AsyncIterable<string>) {}
}

const FLAGS = ['name', 'plan', 'org', 'email', 'id', 'user', 'role', 'ttl', 'meter', 'count', 'from', 'to', 'format', 'since', 'until'] as const;
const BOOLEAN_FLAGS = ['by-key'] as const;

function need(f: Flags, name: string): string {
  const v = f[name];
  if (v === undefined || v === '') throw new UsageError(`missing --${name}`);
  return v;
}
function uuid(f: Flags, name: string): string {
  const v = need(f, name);
  if (!isUuid(v)) throw new UsageError(`--${name} must be a UUID, got "${v}"`);
  return v.toLowerCase();
}
function optUuid(f: Flags, name: string): string | null {
  return f[name] === undefined ? null : uuid(f, name);
}
function plan(f: Flags, fallback?: 'free'): (typeof PLANS)[number] {
  const v = f.plan ?? fallback;
  if (v === undefined) throw new UsageError('missing --plan');
  if (!isPlan(v)) throw new UsageError(`--plan must be one of ${PLANS.join(', ')}, got "${v}"`);
  return v;
}
function int(f: Flags, name: string, fallback: number, min: number, max: number): number {
  const raw = f[name];
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new UsageError(`--${name} must be an integer from ${min} to ${max}, got "${raw}"`);
  }
  return Number(raw);
}

function time(f: Flags, name: string): Date | undefined {
  const raw = f[name];
  if (raw === undefined) return undefined;
  const ok = /^\d{4}-\d{2}-\d{2}$/.test(raw) || /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/i.test(raw);
  const at = new Date(/^\d{4}-\d{2}-\d{2}$/.test(raw) ? `${raw}T00:00:00Z` : raw);
  if (!ok || Number.isNaN(at.getTime())) throw new UsageError(`--${name} must be an RFC 3339 time or a date (YYYY-MM-DD), got "${raw}"`);
  return at;
}

/** Writes to stdout and waits when the pipe is full, so a large export never piles up in memory. */
function writeStdout(chunk: string): Promise<void> {
  return new Promise((resolve, reject) => {
    if (process.stdout.write(chunk)) resolve();
    else {
      process.stdout.once('drain', resolve);
      process.stdout.once('error', reject);
    }
  });
}

const COMMANDS: Record<string, { flags: readonly string[]; run: Command }> = {
  'org create': {
    flags: ['name', 'plan'],
    run: (s, f) => {
      const name = need(f, 'name');
      if (name.length > 200) throw new UsageError('--name must be at most 200 characters');
      return s.createOrg(name, plan(f, 'free'));
    },
  },
  'org set-plan': { flags: ['org', 'plan'], run: (s, f) => s.setPlan(uuid(f, 'org'), plan(f)) },
  'user create': {
    flags: ['email', 'id'],
    run: (s, f) => {
      const email = need(f, 'email');
      if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email) || email.length > 320) throw new UsageError(`--email must be an e-mail address, got "${email}"`);
      return s.createUser(email, optUuid(f, 'id'));
    },
  },
  'member add': {
    flags: ['org', 'user', 'role'],
    run: (s, f) => {
      const role = need(f, 'role');
      if (!isRole(role)) throw new UsageError(`--role must be one of ${ROLES.join(', ')}, got "${role}"`);
      return s.addMember(uuid(f, 'org'), uuid(f, 'user'), role);
    },
  },
  'member remove': { flags: ['org', 'user'], run: (s, f) => s.removeMember(uuid(f, 'org'), uuid(f, 'user')) },
  'workspace create': { flags: ['org', 'user'], run: (s, f) => s.createWorkspace(uuid(f, 'org'), uuid(f, 'user')) },
  session: {
    flags: ['user', 'org', 'ttl'],
    run: (s, f) => s.session(uuid(f, 'user'), optUuid(f, 'org'), int(f, 'ttl', 3600, 1, 31_536_000)),
  },
  'usage record': {
    flags: ['org', 'meter', 'count'],
    run: (s, f) => {
      const meter = need(f, 'meter');
      if (!isMeter(meter)) throw new UsageError(`--meter must be one of ${METERS.join(', ')}, got "${meter}"`);
      return s.recordUsage(uuid(f, 'org'), meter, int(f, 'count', 1, 1, 1_000_000));
    },
  },
  'usage export': {
    flags: ['org', 'from', 'to', 'by-key', 'format'],
    run: async (_s, f, app) => {
      const format = f.format ?? 'csv';
      if (format !== 'csv' && format !== 'jsonl') throw new UsageError(`--format must be csv or jsonl, got "${format}"`);
      const orgId = uuid(f, 'org');
      try {
        return new Lines(await app.get(UsageExporter).open(orgId, { from: f.from, to: f.to }, f['by-key'] !== undefined, format));
      } catch (error) {
        if (error instanceof UnknownOrgError) throw new AdminError(`no org with id ${orgId}`);
        // The range checks speak of the HTTP parameters; here they are flags.
        if (error instanceof BadRequestException) throw new UsageError(`--${error.message}`);
        throw error;
      }
    },
  },
  'audit export': {
    flags: ['org', 'since', 'until'],
    run: async (s, f) => {
      await s.exportAudit(uuid(f, 'org'), time(f, 'since'), time(f, 'until'), writeStdout);
      return null;
    },
  },
};

function parse(argv: string[]): { key: string; flags: Flags } {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      ...Object.fromEntries(FLAGS.map((n) => [n, { type: 'string' as const }])),
      ...Object.fromEntries(BOOLEAN_FLAGS.map((n) => [n, { type: 'boolean' as const }])),
    },
    allowPositionals: true,
    strict: true,
  });
  const key = positionals.length >= 2 && COMMANDS[`${positionals[0]} ${positionals[1]}`] ? `${positionals[0]} ${positionals[1]}` : positionals[0];
  if (!key || !COMMANDS[key]) throw new UsageError(positionals.length ? `unknown command "${positionals.join(' ')}"` : 'no command given');
  if (positionals.length !== key.split(' ').length) throw new UsageError(`unexpected argument "${positionals.at(-1)}"`);
  const flags = Object.fromEntries(Object.entries(values).map(([k, v]) => [k, v === true ? '' : v])) as Flags;
  const allowed = COMMANDS[key].flags;
  for (const name of Object.keys(flags)) {
    if (!allowed.includes(name)) throw new UsageError(`--${name} is not a flag of "${key}"`);
  }
  return { key, flags };
}

/** Streams lines to stdout, waiting whenever the pipe is full. */
async function writeLines(lines: AsyncIterable<string>): Promise<void> {
  for await (const line of lines) {
    if (!process.stdout.write(line)) await once(process.stdout, 'drain');
  }
}

async function main(argv: string[]): Promise<number> {
  if (argv.length === 0 || argv[0] === '--help' || argv[0] === 'help') {
    process.stderr.write(`${USAGE}\n`);
    return argv.length === 0 ? 2 : 0;
  }
  let command: { key: string; flags: Flags };
  try {
    command = parse(argv);
  } catch (error) {
    process.stderr.write(`error: ${(error as Error).message.replace(/^.*?Unknown option '(.*?)'.*$/s, 'unknown flag $1')}\n\n${USAGE}\n`);
    return 2;
  }
  const config = buildAppConfig(loadEnvironment());
  fillDevelopmentSecrets(config);
  const app = await NestFactory.createApplicationContext(AdminModule.register(config, () => openDatabase(config, 'cli')), {
    logger: false,
    abortOnError: false,
  });
  try {
    const result = await COMMANDS[command.key].run(app.get(DirectoryAdminService), command.flags, app);
    if (result instanceof Lines) await writeLines(result.lines);
    else if (result !== null) process.stdout.write(`${JSON.stringify(result)}\n`);
    return 0;
  } finally {
    await app.close();
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    if (error instanceof UsageError) process.stderr.write(`error: ${error.message}\n`);
    else if (error instanceof AdminError || error instanceof ConfigError || error instanceof UsageLimitExceededError) {
      process.stderr.write(`error: ${error.message}\n`);
    } else process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
