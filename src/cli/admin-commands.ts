import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { isPlan, isRole, isUuid, PLANS, ROLES, type Plan, type Role } from '../common/roles.js';
import type { INestApplicationContext } from '@nestjs/common';
import { isMeter, METERS, type Meter } from '../common/meters.js';
import type { DirectoryAdminService } from './directory-admin.service.js';

/**
 * The operator CLI. Its contract (decisions.md): one JSON object on stdout and exit 0, or a clear
 * message on stderr and a non-zero exit. Every command is one entry of COMMANDS below: its flags,
 * its help and what it prints live beside the code that runs it, and `--help` is built from them.
 */

/** Exit codes (README, "Operator CLI"). */
export const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

export const PROGRAM = 'npm run --silent admin --';

/** A mistake in how the command was called: exit 2, with a pointer to the help. */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly command?: string,
  ) {
    super(message);
  }
}

export type Flags = Record<string, string | undefined>;

interface FlagSpec {
  /** What the value looks like in help, e.g. `<org-id>` or `free|pro`; '' for a switch. */
  value: string;
  help: string;
  required?: boolean;
  /** A switch that takes no value (`--by-key`); present = ''. */
  boolean?: boolean;
}

/**
 * What a streaming command returns instead of one JSON object: it writes its own lines to
 * `write`, which waits whenever stdout is full, so an export never piles up in memory.
 */
export class Streamed {
  constructor(readonly pipe: (write: (chunk: string) => Promise<void>) => Promise<void>) {}
}

export interface CommandSpec<A> {
  summary: string;
  flags: Record<string, FlagSpec>;
  /** What a success prints on stdout. */
  prints: string;
  /** Checks and converts the flags before anything opens the database. */
  args: (f: Flags) => A;
  run: (svc: DirectoryAdminService, args: A, app: INestApplicationContext) => Promise<object | Streamed>;
}

/** Keeps each entry's `args` and `run` in step while the table holds them all. */
const command = <A>(spec: CommandSpec<A>): CommandSpec<unknown> => spec as CommandSpec<unknown>;

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
function plan(f: Flags, fallback?: Plan): Plan {
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
  const date = /^\d{4}-\d{2}-\d{2}$/.test(raw);
  const ok = date || /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/i.test(raw);
  const at = new Date(date ? `${raw}T00:00:00Z` : raw);
  if (!ok || Number.isNaN(at.getTime())) throw new UsageError(`--${name} must be an RFC 3339 time or a date (YYYY-MM-DD), got "${raw}"`);
  return at;
}

const ORG = (help = 'The org (a UUID).'): FlagSpec => ({ value: '<org-id>', help, required: true });
const USER = (help = 'The user (a UUID).'): FlagSpec => ({ value: '<user-id>', help, required: true });

/** Every command. Adding one is adding an entry here (help included). */
export const COMMANDS: Record<string, CommandSpec<unknown>> = {
  'org create': command({
    summary: 'Create an org.',
    flags: {
      name: { value: '<name>', help: 'Its name, at most 200 characters.', required: true },
      plan: { value: PLANS.join('|'), help: 'Its plan (default free).' },
    },
    prints: '{"id","name","plan"}',
    args: (f) => {
      const name = need(f, 'name');
      if (name.length > 200) throw new UsageError('--name must be at most 200 characters');
      return { name, plan: plan(f, 'free') };
    },
    run: (s, a) => s.createOrg(a.name, a.plan),
  }),
  'org set-plan': command({
    summary: "Change an org's plan.",
    flags: { org: ORG(), plan: { value: PLANS.join('|'), help: 'The new plan.', required: true } },
    prints: '{"id","name","plan"}',
    args: (f) => ({ org: uuid(f, 'org'), plan: plan(f) }),
    run: (s, a) => s.setPlan(a.org, a.plan),
  }),
  'user create': command({
    summary: 'Create a user.',
    flags: {
      email: { value: '<email>', help: 'E-mail address, unique regardless of case.', required: true },
      id: { value: '<uuid>', help: "The user's id, e.g. from your identity provider (default: a new UUID)." },
    },
    prints: '{"id","email"}',
    args: (f) => {
      const email = need(f, 'email');
      if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email) || email.length > 320) throw new UsageError(`--email must be an e-mail address, got "${email}"`);
      return { email, id: optUuid(f, 'id') };
    },
    run: (s, a) => s.createUser(a.email, a.id),
  }),
  'member add': command({
    summary: 'Add a user to an org with a role; adding again changes the role.',
    flags: { org: ORG(), user: USER(), role: { value: ROLES.join('|'), help: 'Role in the org (viewer: read only).', required: true } },
    prints: '{"org_id","user_id","role"}',
    args: (f) => {
      const role = need(f, 'role');
      if (!isRole(role)) throw new UsageError(`--role must be one of ${ROLES.join(', ')}, got "${role}"`);
      return { org: uuid(f, 'org'), user: uuid(f, 'user'), role: role as Role };
    },
    run: (s, a) => s.addMember(a.org, a.user, a.role),
  }),
  'member remove': command({
    summary: 'Remove a user from an org (their keys in it stop verifying).',
    flags: { org: ORG(), user: USER() },
    prints: '{"org_id","user_id","role","removed":true}',
    args: (f) => ({ org: uuid(f, 'org'), user: uuid(f, 'user') }),
    run: (s, a) => s.removeMember(a.org, a.user),
  }),
  'workspace create': command({
    summary: 'Record that a member connected a repository in an org (mint needs it). Idempotent.',
    flags: { org: ORG(), user: USER('A member of the org (a UUID).') },
    prints: '{"id","org_id","user_id"}',
    args: (f) => ({ org: uuid(f, 'org'), user: uuid(f, 'user') }),
    run: (s, a) => s.createWorkspace(a.org, a.user),
  }),
  session: command({
    summary: 'Sign a development session JWT for a user with SESSION_JWT_SECRET.',
    flags: {
      user: USER(),
      org: { value: '<org-id>', help: 'The org the session operates in (the user must be a member).' },
      ttl: { value: '<seconds>', help: 'Lifetime, 1 to 31536000 seconds (default 3600).' },
    },
    prints: '{"token"}',
    args: (f) => ({ user: uuid(f, 'user'), org: optUuid(f, 'org'), ttl: int(f, 'ttl', 3600, 1, 31_536_000) }),
    run: (s, a) => s.session(a.user, a.org, a.ttl),
  }),
  'usage record': command({
    summary: "Charge an org's meter through the same atomic path as the service; over the limit nothing is recorded.",
    flags: {
      org: ORG(),
      meter: { value: METERS.join('|'), help: 'The meter to charge.', required: true },
      count: { value: '<n>', help: 'Units, 1 to 1000000 (default 1).' },
    },
    prints: '{"org_id","meter","count","asks","retrieves","imports","captures","resets_at"}',
    args: (f) => {
      const meter = need(f, 'meter');
      if (!isMeter(meter)) throw new UsageError(`--meter must be one of ${METERS.join(', ')}, got "${meter}"`);
      return { org: uuid(f, 'org'), meter: meter as Meter, count: int(f, 'count', 1, 1, 1_000_000) };
    },
    run: (s, a) => s.recordUsage(a.org, a.meter, a.count),
  }),
  'audit export': command({
    summary: "Stream an org's audit events as JSON Lines, oldest first (read in keyset batches).",
    flags: {
      org: ORG(),
      since: { value: '<time>', help: 'From this instant, inclusive: an RFC 3339 time or a date (YYYY-MM-DD, UTC midnight).' },
      until: { value: '<time>', help: 'Up to this instant, exclusive: an RFC 3339 time or a date.' },
    },
    prints: 'one audit event per line: {"id","time","org_id","action","actor",...}',
    args: (f) => ({ org: uuid(f, 'org'), since: time(f, 'since'), until: time(f, 'until') }),
    run: async (s, a) => new Streamed(async (write) => {
      await s.exportAudit(a.org, a.since, a.until, write);
    }),
  }),
  'usage export': command({
    summary: "Stream an org's daily usage (per key with --by-key) as CSV or JSON Lines.",
    flags: {
      org: ORG(),
      from: { value: 'YYYY-MM-DD', help: 'First UTC day (default: 29 days before --to).' },
      to: { value: 'YYYY-MM-DD', help: 'Last UTC day (default: today).' },
      'by-key': { value: '', help: 'One row per day and credential instead of per day.', boolean: true },
      format: { value: 'csv|jsonl', help: 'Output format (default csv).' },
    },
    prints: 'CSV with a header row, or one JSON object per line',
    args: (f) => {
      const format = f.format ?? 'csv';
      if (format !== 'csv' && format !== 'jsonl') throw new UsageError(`--format must be csv or jsonl, got "${format}"`);
      return { org: uuid(f, 'org'), from: f.from, to: f.to, byKey: f['by-key'] !== undefined, format: format as 'csv' | 'jsonl' };
    },
    run: async (_s, a, app) => {
      const [{ UsageExporter }, { UnknownOrgError }, { BadRequestException }, { AdminError }] = await Promise.all([
        import('../usage/usage-export.js'),
        import('../common/meters.js'),
        import('@nestjs/common'),
        import('./directory-admin.service.js'),
      ]);
      try {
        const lines = await app.get(UsageExporter).open(a.org, { from: a.from, to: a.to }, a.byKey, a.format);
        return new Streamed(async (write) => {
          for await (const line of lines) await write(line);
        });
      } catch (error) {
        if (error instanceof UnknownOrgError) throw new AdminError(`no org with id ${a.org}`);
        // The range checks speak of the HTTP parameters; here they are flags.
        if (error instanceof BadRequestException) throw new UsageError(`--${error.message}`, 'usage export');
        throw error;
      }
    },
  }),
};

export function version(): string {
  // dist/cli/admin.js and src/cli/admin.ts are both two levels below the package root.
  const pkg = JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'package.json'), 'utf8')) as { name: string; version: string };
  return `${pkg.name} ${pkg.version}`;
}

function synopsis(name: string): string {
  const flags = Object.entries(COMMANDS[name].flags).map(([flag, spec]) => {
    const text = spec.boolean ? `--${flag}` : `--${flag} ${spec.value}`;
    return spec.required ? text : `[${text}]`;
  });
  return [name, ...flags].join(' ');
}

function validFlags(name: string): string {
  return [...Object.keys(COMMANDS[name].flags), 'help'].map((f) => `--${f}`).join(', ');
}

export function toolHelp(): string {
  const names = Object.keys(COMMANDS);
  const width = Math.max(...names.map((n) => n.length));
  return [
    `Usage: ${PROGRAM} <command> [flags]`,
    '       (without npm, e.g. in the production image: node dist/cli/admin.js <command> [flags])',
    '',
    'Commands:',
    ...names.map((n) => `  ${n.padEnd(width)}  ${COMMANDS[n].summary}`),
    '',
    `Help on a command: ${PROGRAM} <command> --help   Version: ${PROGRAM} --version`,
    'It reads the same environment as the server (DATABASE_URL, SESSION_JWT_SECRET, DATA_DIR, ...).',
    'Each command prints one JSON object on stdout (the exports stream lines). Changes in an org',
    'are recorded in its audit log with the operator CLI as actor. Exit codes: 0 done; 1 the command failed',
    '(not found, not a member, limit reached, database unavailable); 2 usage error (unknown command',
    'or flag, missing or bad value). Errors go to stderr.',
  ].join('\n');
}

export function commandHelp(name: string): string {
  const spec = COMMANDS[name];
  const rows = Object.entries(spec.flags).map(([flag, f]) => [f.boolean ? `--${flag}` : `--${flag} ${f.value}`, f.required ? 'required' : 'optional', f.help]);
  rows.push(['--help', '', 'Show this help.']);
  const w = Math.max(...rows.map((r) => r[0].length));
  return [
    `Usage: ${PROGRAM} ${synopsis(name)}`,
    '',
    spec.summary,
    '',
    'Flags:',
    ...rows.map(([flag, req, help]) => `  ${flag.padEnd(w)}  ${req.padEnd(8)}  ${help}`.trimEnd()),
    '',
    `Prints: ${spec.prints}`,
  ].join('\n');
}

export type Parsed = { kind: 'help'; text: string } | { kind: 'version' } | { kind: 'run'; name: string; flags: Flags };

/** The command is the leading words; the rest are that command's flags, and only those. */
export function parse(argv: string[]): Parsed {
  if (argv.length === 1 && argv[0] === '--version') return { kind: 'version' };
  if (argv[0] === 'help' || argv[0] === '--help' || argv[0] === '-h') {
    const topic = argv.slice(1).join(' ');
    if (!topic) return { kind: 'help', text: toolHelp() };
    if (!COMMANDS[topic]) throw new UsageError(`unknown command "${topic}"`);
    return { kind: 'help', text: commandHelp(topic) };
  }
  const words: string[] = [];
  for (const arg of argv) {
    if (arg.startsWith('-')) break;
    words.push(arg);
  }
  const name = COMMANDS[words.slice(0, 2).join(' ')] ? words.slice(0, 2).join(' ') : words[0];
  if (!name || !COMMANDS[name]) {
    if (words.length > 0 && argv.includes('--help')) {
      // `admin org --help`: the commands of that group.
      const group = Object.keys(COMMANDS).filter((n) => n.startsWith(`${words[0]} `));
      if (group.length > 0) return { kind: 'help', text: group.map((n) => commandHelp(n)).join('\n\n') };
    }
    throw new UsageError(words.length ? `unknown command "${words.join(' ')}"` : argv.length ? `unknown flag ${argv[0]}` : 'no command given');
  }
  const rest = argv.slice(name.split(' ').length);
  const spec = COMMANDS[name];
  let values: Record<string, string | boolean | undefined>;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: rest,
      options: {
        ...Object.fromEntries(Object.entries(spec.flags).map(([n, f]) => [n, { type: f.boolean ? ('boolean' as const) : ('string' as const) }])),
        help: { type: 'boolean' as const, short: 'h' },
      },
      allowPositionals: true,
      strict: true,
    }));
  } catch (error) {
    const e = error as { code?: string; message: string };
    const unknown = /Unknown option '(.*?)'/.exec(e.message)?.[1];
    if (unknown) throw new UsageError(`unknown flag ${unknown} for "${name}"; valid flags: ${validFlags(name)}`, name);
    const missingValue = /Option '(?:-\w, )?(--[\w-]+).*argument missing/.exec(e.message)?.[1];
    if (missingValue) throw new UsageError(`${missingValue} needs a value`, name);
    throw new UsageError(e.message.split('\n')[0], name);
  }
  if (values.help) return { kind: 'help', text: commandHelp(name) };
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}" for "${name}"`, name);
  const flags = Object.fromEntries(Object.entries(values).filter(([k]) => k !== 'help').map(([k, v]) => [k, v === true ? '' : v])) as Flags;
  return { kind: 'run', name, flags };
}
