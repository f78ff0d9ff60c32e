import { METERS } from './meters.js';

/*
 * The meters a deployment counts: the contract's four, always, and the deployment's own (the
 * module option `meters`, or USAGE_METERS). No framework import: the operator CLI checks
 * `--meter` with it before loading Nest.
 */

/** A meter as the deployment defines it: what one unit of it is. */
export interface MeterDefinition {
  description: string;
}

/** What a host passes as the module's `meters` option, or the server reads from USAGE_METERS. */
export type MeterRegistryInput = Record<string, { description: string }>;

/** The contract's meters; asks and retrieves share the query wallet's limit. */
export const CONTRACT_METERS: Readonly<Record<(typeof METERS)[number], MeterDefinition>> = {
  asks: { description: 'Questions asked; counts toward the query wallet (mcp_queries).' },
  retrieves: { description: 'Retrievals; counts toward the query wallet (mcp_queries).' },
  imports: { description: 'Imports.' },
  captures: { description: 'Decision captures.' },
};

export const MAX_METERS = 50;
export const MAX_METER_LENGTH = 64;
const MAX_DESCRIPTION_LENGTH = 500;
const METER_NAME = /^[a-z0-9_-]+$/;
const NAME_RULE = `lower case letters, digits, "_" and "-", at most ${MAX_METER_LENGTH} characters`;
/**
 * Names a deployment meter cannot take: the contract's four, and the query wallet's two names
 * (`wallet` in PLAN_LIMITS, `mcp_queries` in GET /usage and the usage.threshold event).
 */
export const RESERVED_METER_NAMES: readonly string[] = [...METERS, 'wallet', 'mcp_queries'];

/** True for a string shaped like a meter name (defined or not). */
export function isMeterName(value: unknown): boolean {
  return typeof value === 'string' && value.length <= MAX_METER_LENGTH && METER_NAME.test(value);
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Reads the deployment's own meters from untrusted input (JSON or module options), in the order
 * given. Anything malformed throws one line naming `source` and the offending entry.
 */
export function parseMeterRegistry(input: unknown, source: string): Map<string, MeterDefinition> {
  const meters = new Map<string, MeterDefinition>();
  if (input === undefined || input === null) return meters;
  if (!isObject(input)) throw new Error(`${source} must be an object like {"exports":{"description":"…"}}`);
  const entries = Object.entries(input);
  if (entries.length > MAX_METERS) throw new Error(`${source}: at most ${MAX_METERS} meters, got ${entries.length}`);
  for (const [name, entry] of entries) {
    const at = `${source}["${name}"]`;
    if (!isMeterName(name)) throw new Error(`${source}: "${name}" is not a meter name (${NAME_RULE})`);
    if (RESERVED_METER_NAMES.includes(name)) {
      throw new Error(`${source}: "${name}" is a name of the contract's meters (${RESERVED_METER_NAMES.join(', ')})`);
    }
    if (!isObject(entry)) throw new Error(`${at} must be an object with a description`);
    const unknown = Object.keys(entry).find((k) => k !== 'description');
    if (unknown !== undefined) throw new Error(`${at}: unknown field "${unknown}" (allowed: description)`);
    const description = entry.description;
    if (typeof description !== 'string' || description.length === 0 || description.length > MAX_DESCRIPTION_LENGTH) {
      throw new Error(`${at}.description must be a string of 1 to ${MAX_DESCRIPTION_LENGTH} characters`);
    }
    meters.set(name, { description });
  }
  return meters;
}

/**
 * The meters this deployment counts: the contract's four (stored as columns of the day's row,
 * charged by `kui_charge_batch`) and the deployment's own (a row per meter and day). Every name
 * `@Charges`, `UsageService.charge` and `usage record --meter` take is one of `names`.
 */
export class MeterRegistry {
  /** The contract's four first, then the deployment's in the order they were defined. */
  readonly names: readonly string[];
  /** The deployment's own meters only. */
  readonly deployment: readonly string[];
  private readonly definitions: ReadonlyMap<string, MeterDefinition>;

  constructor(input?: unknown, source = 'meters') {
    const own = parseMeterRegistry(input, source);
    this.deployment = [...own.keys()];
    this.definitions = new Map([...Object.entries(CONTRACT_METERS), ...own]);
    this.names = [...this.definitions.keys()];
  }

  has(name: unknown): boolean {
    return typeof name === 'string' && this.definitions.has(name);
  }

  /** A meter the deployment defined (not one of the contract's four). */
  isDeployment(name: string): boolean {
    return this.definitions.has(name) && !(METERS as readonly string[]).includes(name);
  }

  describe(name: string): string {
    return this.definitions.get(name)?.description ?? '';
  }
}
