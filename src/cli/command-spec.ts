import { isPlan, isUuid, PLANS, type Plan, type Scope } from '../common/roles.js';
import { parseScopeRegistry } from '../common/scope-names.js';
import { scopeRegistryFromEnv } from '../config/scopes-env.js';
import { MeterRegistry } from '../common/meter-registry.js';
import { meterRegistryFromEnv } from '../config/meters-env.js';
import type { INestApplicationContext } from '@nestjs/common';
import type { DirectoryAdminService } from './directory-admin.service.js';

/**
 * The operator CLI. Its contract (decisions.md): one JSON object on stdout and exit 0, or a clear
 * message on stderr and a non-zero exit. Every command is one entry of COMMANDS below: its flags,
 * its help and what it prints live beside the code that runs it, and `--help` is built from them.
 */

/** Exit codes (docs/cli.md, "Exit codes"). */
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

export interface FlagSpec {
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
export const command = <A>(spec: CommandSpec<A>): CommandSpec<unknown> => spec as CommandSpec<unknown>;

export function need(f: Flags, name: string): string {
  const v = f[name];
  if (v === undefined || v === '') throw new UsageError(`missing --${name}`);
  return v;
}
export function uuid(f: Flags, name: string): string {
  const v = need(f, name);
  // String(): the type guard narrows a string that is not a UUID to `never`.
  if (!isUuid(v)) throw new UsageError(`--${name} must be a UUID, got "${String(v)}"`);
  return v.toLowerCase();
}
export function optUuid(f: Flags, name: string): string | null {
  return f[name] === undefined ? null : uuid(f, name);
}
export function plan(f: Flags, fallback?: Plan): Plan {
  const v = f.plan ?? fallback;
  if (v === undefined) throw new UsageError('missing --plan');
  if (!isPlan(v)) throw new UsageError(`--plan must be one of ${PLANS.join(', ')}, got "${v}"`);
  return v;
}
export function int(f: Flags, name: string, fallback: number, min: number, max: number): number {
  const raw = f[name];
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new UsageError(`--${name} must be an integer from ${min} to ${max}, got "${raw}"`);
  }
  return Number(raw);
}

export function bool(f: Flags, name: string): boolean | undefined {
  const raw = f[name];
  if (raw === undefined) return undefined;
  if (raw !== 'true' && raw !== 'false') throw new UsageError(`--${name} must be true or false, got "${raw}"`);
  return raw === 'true';
}

/** A day count, or `none` (null: no such rule). */
export function daysOrNone(f: Flags, name: string, range: { min: number; max: number }): number | null | undefined {
  const raw = f[name];
  if (raw === undefined) return undefined;
  if (raw === 'none') return null;
  if (!/^\d+$/.test(raw) || Number(raw) < range.min || Number(raw) > range.max) {
    throw new UsageError(`--${name} must be none or an integer from ${range.min} to ${range.max}, got "${raw}"`);
  }
  return Number(raw);
}

/** The deployment's scope names (API_KEY_SCOPES or its _FILE; a bad registry fails the command, exit 1). */
export function deploymentScopes(): string[] {
  const env = {
    API_KEY_SCOPES: process.env.API_KEY_SCOPES || undefined,
    API_KEY_SCOPES_FILE: process.env.API_KEY_SCOPES_FILE || undefined,
  };
  try {
    return [...parseScopeRegistry(scopeRegistryFromEnv(env), 'API_KEY_SCOPES').keys()];
  } catch (error) {
    throw new Error(`Invalid configuration:\n  ${(error as Error).message}`);
  }
}

/** The deployment's meters: the contract's four and USAGE_METERS (or its _FILE; a bad one fails the command, exit 1). */
export function deploymentMeters(): MeterRegistry {
  const env = {
    USAGE_METERS: process.env.USAGE_METERS || undefined,
    USAGE_METERS_FILE: process.env.USAGE_METERS_FILE || undefined,
  };
  try {
    return new MeterRegistry(meterRegistryFromEnv(env), 'USAGE_METERS');
  } catch (error) {
    throw new Error(`Invalid configuration:\n  ${(error as Error).message}`);
  }
}

/** A meter the deployment defines (`--meter exports`). */
export function meter(f: Flags, name: string): string {
  const value = need(f, name);
  const meters = deploymentMeters();
  if (!meters.has(value)) throw new UsageError(`--${name} must be one of ${meters.names.join(', ')}; got "${value}"`);
  return value;
}

/** Scopes separated by commas (`decisions:read,decisions:write`), each one the deployment registers. */
export function scopes(f: Flags, name: string): Scope[] | undefined {
  const raw = f[name];
  if (raw === undefined) return undefined;
  const list = raw.split(',').map((s) => s.trim());
  const registered = deploymentScopes();
  const unknown = list.find((s) => !registered.includes(s));
  if (unknown !== undefined)
    throw new UsageError(
      `--${name} must be scopes separated by commas, each one of ${registered.join(', ')}; got "${unknown}"`,
    );
  return list;
}

export function time(f: Flags, name: string): Date | undefined {
  const raw = f[name];
  if (raw === undefined) return undefined;
  const date = /^\d{4}-\d{2}-\d{2}$/.test(raw);
  const ok = date || /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/i.test(raw);
  const at = new Date(date ? `${raw}T00:00:00Z` : raw);
  if (!ok || Number.isNaN(at.getTime()))
    throw new UsageError(`--${name} must be an RFC 3339 time or a date (YYYY-MM-DD), got "${raw}"`);
  return at;
}

export const ORG = (help = 'The org (a UUID).'): FlagSpec => ({ value: '<org-id>', help, required: true });
export const USER = (help = 'The user (a UUID).'): FlagSpec => ({ value: '<user-id>', help, required: true });

/** Every command. Adding one is adding an entry here (help included). */
