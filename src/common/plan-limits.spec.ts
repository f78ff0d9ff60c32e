import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildAppConfig, ConfigError, loadEnvironment } from '../config/app-config.js';
import { DEFAULT_PLAN_LIMITS, parsePlanLimits } from './plan-limits.js';

describe('parsePlanLimits', () => {
  it('defaults to free = wallet 100, imports 10, captures 100 and pro = unlimited wallet, imports 1000, captures 10000', () => {
    expect(parsePlanLimits({})).toEqual({
      free: { wallet: 100, imports: 10, captures: 100 },
      pro: { wallet: null, imports: 1000, captures: 10000 },
    });
  });

  it('overrides only the plans and meters it names, and null means unlimited', () => {
    expect(parsePlanLimits({ free: { wallet: 5, captures: null }, pro: { wallet: 50 } })).toEqual({
      free: { wallet: 5, imports: 10, captures: null },
      pro: { wallet: 50, imports: 1000, captures: 10000 },
    });
  });

  it('accepts 0, a meter nobody may use', () => {
    expect(parsePlanLimits({ free: { imports: 0 } }).free.imports).toBe(0);
  });

  it('never alters the defaults it starts from', () => {
    parsePlanLimits({ free: { wallet: 1 } });

    expect(DEFAULT_PLAN_LIMITS.free.wallet).toBe(100);
  });

  it.each([
    ['a non-object', [], /PLAN_LIMITS must be a JSON object/],
    ['null', null, /PLAN_LIMITS must be a JSON object/],
    ['an unknown plan', { enterprise: {} }, /PLAN_LIMITS: unknown plan "enterprise"/],
    ['a plan that is not an object', { free: 3 }, /PLAN_LIMITS\.free must be an object/],
    [
      'an unknown meter',
      { free: { asks: 3 } },
      /PLAN_LIMITS\.free: unknown meter "asks" \(allowed: wallet, imports, captures\)/,
    ],
    ['a negative limit', { free: { wallet: -1 } }, /PLAN_LIMITS\.free\.wallet must be/],
    ['a fractional limit', { pro: { imports: 1.5 } }, /PLAN_LIMITS\.pro\.imports must be/],
    ['a string limit', { free: { captures: '10' } }, /PLAN_LIMITS\.free\.captures must be/],
    ['a limit the daily counters cannot hold', { free: { wallet: 2 ** 31 } }, /PLAN_LIMITS\.free\.wallet must be/],
  ])('refuses %s, naming where', (_, input, message) => {
    expect(() => parsePlanLimits(input)).toThrow(message);
  });

  it('accepts the largest limit the daily counters can hold', () => {
    expect(parsePlanLimits({ free: { wallet: 2 ** 31 - 1 } }).free.wallet).toBe(2 ** 31 - 1);
  });
});

describe('plan limits in the app configuration', () => {
  const config = (env: Record<string, string>) => buildAppConfig(loadEnvironment(env));

  it('uses the defaults when neither PLAN_LIMITS nor PLAN_LIMITS_FILE is set', () => {
    expect(config({}).planLimits).toEqual(DEFAULT_PLAN_LIMITS);
  });

  it('reads PLAN_LIMITS as JSON', () => {
    expect(config({ PLAN_LIMITS: '{"free":{"wallet":7}}' }).planLimits.free).toEqual({
      wallet: 7,
      imports: 10,
      captures: 100,
    });
  });

  it('reads PLAN_LIMITS_FILE as a JSON file', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'kui-limits-')), 'limits.json');
    writeFileSync(file, '{"pro":{"captures":null}}');

    expect(config({ PLAN_LIMITS_FILE: file }).planLimits.pro).toEqual({ wallet: null, imports: 1000, captures: null });
  });

  it.each([
    ['not JSON', { PLAN_LIMITS: '{free:' }, /PLAN_LIMITS: not valid JSON/],
    [
      'a bad value',
      { PLAN_LIMITS: '{"free":{"wallet":"lots"}}' },
      /PLAN_LIMITS\.free\.wallet must be an integer from 0 to 2147483647, or null \(unlimited\)/,
    ],
    [
      'both sources at once',
      { PLAN_LIMITS: '{}', PLAN_LIMITS_FILE: '/dev/null' },
      /PLAN_LIMITS or PLAN_LIMITS_FILE, not both/,
    ],
    [
      'a file that does not exist',
      { PLAN_LIMITS_FILE: '/nonexistent/limits.json' },
      /PLAN_LIMITS_FILE: cannot read \/nonexistent\/limits\.json/,
    ],
  ])('stops with a ConfigError naming the variable for %s', (_, env, message) => {
    const build = () => config(env);

    expect(build).toThrow(ConfigError);
    expect(build).toThrow(message);
  });

  it('names PLAN_LIMITS_FILE, not PLAN_LIMITS, when the file is not JSON', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'kui-limits-')), 'limits.json');
    writeFileSync(file, 'free: 10');

    expect(() => config({ PLAN_LIMITS_FILE: file })).toThrow(/PLAN_LIMITS_FILE: not valid JSON/);
  });

  it('names PLAN_LIMITS_FILE for a bad value inside the file', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'kui-limits-')), 'limits.json');
    writeFileSync(file, '{"free":{"imports":-5}}');

    expect(() => config({ PLAN_LIMITS_FILE: file })).toThrow(/PLAN_LIMITS_FILE\.free\.imports must be/);
  });
});
