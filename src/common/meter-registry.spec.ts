import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildAppConfig, ConfigError, loadEnvironment } from '../config/app-config.js';
import { Settings } from '../settings/settings.js';
import { MAX_METERS, MeterRegistry, parseMeterRegistry } from './meter-registry.js';

describe('MeterRegistry', () => {
  it('holds the contract’s four meters, then the deployment’s in the order they are defined', () => {
    const registry = new MeterRegistry({
      exports: { description: 'Report exports' },
      'pdf_pages-2': { description: 'p' },
    });

    expect(registry.names).toEqual(['asks', 'retrieves', 'imports', 'captures', 'exports', 'pdf_pages-2']);
    expect(registry.deployment).toEqual(['exports', 'pdf_pages-2']);
    expect(registry.has('exports')).toBe(true);
    expect(registry.has('captures')).toBe(true);
    expect(registry.has('export')).toBe(false);
    expect(registry.has(undefined)).toBe(false);
    expect(registry.isDeployment('exports')).toBe(true);
    expect(registry.isDeployment('captures')).toBe(false);
    expect(registry.isDeployment('nope')).toBe(false);
    expect(registry.describe('exports')).toBe('Report exports');
  });

  it('is the contract’s four alone when nothing is defined', () => {
    for (const input of [undefined, null, {}]) {
      expect(new MeterRegistry(input).names).toEqual(['asks', 'retrieves', 'imports', 'captures']);
      expect(new MeterRegistry(input).deployment).toEqual([]);
    }
  });

  it('accepts 50 meters and a name of 64 characters', () => {
    const fifty = Object.fromEntries(Array.from({ length: MAX_METERS }, (_, i) => [`m${i}`, { description: 'd' }]));
    expect(new MeterRegistry(fifty).deployment).toHaveLength(50);
    expect(new MeterRegistry({ ['a'.repeat(64)]: { description: 'd' } }).deployment).toEqual(['a'.repeat(64)]);
  });

  it.each([
    ['not an object', [], /^USAGE_METERS must be an object like \{"exports":\{"description":"…"\}\}$/],
    [
      'more than 50 meters',
      Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`m${i}`, { description: 'd' }])),
      /^USAGE_METERS: at most 50 meters, got 51$/,
    ],
    [
      'an upper-case name',
      { Exports: { description: 'd' } },
      /^USAGE_METERS: "Exports" is not a meter name \(lower case/,
    ],
    ['a name with a colon', { 'exports:pdf': { description: 'd' } }, /"exports:pdf" is not a meter name/],
    ['a name of 65 characters', { ['a'.repeat(65)]: { description: 'd' } }, /is not a meter name/],
    ['the empty name', { '': { description: 'd' } }, /^USAGE_METERS: "" is not a meter name/],
    [
      'a contract meter',
      { captures: { description: 'd' } },
      /^USAGE_METERS: "captures" is a name of the contract's meters/,
    ],
    ['the wallet', { wallet: { description: 'd' } }, /"wallet" is a name of the contract's meters/],
    [
      'an entry that is not an object',
      { exports: 'x' },
      /^USAGE_METERS\["exports"\] must be an object with a description$/,
    ],
    [
      'no description',
      { exports: {} },
      /^USAGE_METERS\["exports"\]\.description must be a string of 1 to 500 characters$/,
    ],
    ['an empty description', { exports: { description: '' } }, /\.description must be a string/],
    ['a description of 501 characters', { exports: { description: 'd'.repeat(501) } }, /\.description must be/],
    [
      'an unknown field',
      { exports: { description: 'd', limit: 5 } },
      /^USAGE_METERS\["exports"\]: unknown field "limit"/,
    ],
  ])('refuses %s in one line naming the source and the entry', (_, input, message) => {
    expect(() => parseMeterRegistry(input, 'USAGE_METERS')).toThrow(message);
    expect(() => parseMeterRegistry(input, 'USAGE_METERS')).not.toThrow(/\n/);
  });
});

describe('deployment meters in the app configuration', () => {
  const config = (env: Record<string, string>) => buildAppConfig(loadEnvironment(env));
  const METERS = '{"exports":{"description":"Report exports"}}';

  it('reads USAGE_METERS, or the file USAGE_METERS_FILE names, into the module options', () => {
    const dir = mkdtempSync(join(tmpdir(), 'meters-'));
    const file = join(dir, 'meters.json');
    writeFileSync(file, METERS);

    expect(config({ USAGE_METERS: METERS }).meters).toEqual({ exports: { description: 'Report exports' } });
    expect(config({ USAGE_METERS_FILE: file }).meters).toEqual({ exports: { description: 'Report exports' } });
    expect(config({}).meters).toBeUndefined();
  });

  it('takes limits for the deployment’s meters in PLAN_LIMITS under their names; one left out is unlimited', () => {
    const limits = config({ USAGE_METERS: METERS, PLAN_LIMITS: '{"free":{"exports":5,"wallet":50}}' }).planLimits;

    expect(limits.free).toEqual({ wallet: 50, imports: 10, captures: 100, exports: 5 });
    expect(limits.pro.exports).toBeUndefined();
  });

  it.each([
    [{ USAGE_METERS: 'not json' }, /^Invalid configuration:\n {2}USAGE_METERS: not valid JSON/],
    [
      { USAGE_METERS: '{"Exports":{"description":"x"}}' },
      /^Invalid configuration:\n {2}USAGE_METERS: "Exports" is not/,
    ],
    [{ USAGE_METERS: METERS, USAGE_METERS_FILE: '/x' }, /set USAGE_METERS or USAGE_METERS_FILE, not both/],
    [{ USAGE_METERS_FILE: '/nonexistent/meters.json' }, /USAGE_METERS_FILE: cannot read \/nonexistent\/meters\.json/],
    [
      { PLAN_LIMITS: '{"free":{"exports":5}}' },
      /PLAN_LIMITS\.free: unknown meter "exports" \(allowed: wallet, imports, captures\)$/,
    ],
    [
      { USAGE_METERS: METERS, PLAN_LIMITS: '{"pro":{"export":5}}' },
      /PLAN_LIMITS\.pro: unknown meter "export" \(allowed: wallet, imports, captures, exports\)$/,
    ],
    [{ USAGE_METERS: METERS, PLAN_LIMITS: '{"pro":{"exports":-1}}' }, /PLAN_LIMITS\.pro\.exports must be an integer/],
  ])('stops the start on %j, naming the variable and the entry', (env, message) => {
    expect(() => config(env)).toThrow(ConfigError);
    expect(() => config(env)).toThrow(message);
  });
});

describe('deployment meters in the module options', () => {
  const session = { secret: 'x'.repeat(32) };

  it('builds the registry from the option meters, and checks planLimits against it', () => {
    const settings = new Settings({
      session,
      meters: { exports: { description: 'Report exports' } },
      planLimits: {
        free: { wallet: 1, imports: 1, captures: 1, exports: 2 },
        pro: { wallet: null, imports: 1, captures: 1 },
      },
    });

    expect(settings.meters.names).toContain('exports');
    expect(settings.planLimits.free.exports).toBe(2);
  });

  it('refuses a malformed option, and a limit for a meter it does not define, naming the option', () => {
    expect(() => new Settings({ session, meters: { 'Bad Name': { description: 'x' } } })).toThrow(
      /^KeysUsageIdentityModule option meters: "Bad Name" is not a meter name/,
    );
    expect(
      () =>
        new Settings({
          session,
          planLimits: {
            free: { wallet: 1, imports: 1, captures: 1, exports: 2 },
            pro: { wallet: 1, imports: 1, captures: 1 },
          },
        }),
    ).toThrow(/^KeysUsageIdentityModule option planLimits\.free: unknown meter "exports"/);
  });
});
