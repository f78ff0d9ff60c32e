import { describe, expect, it } from 'vitest';
import { eventsSettingsFrom } from '../app.module.js';
import { buildAppConfig, loadEnvironment } from '../config/app-config.js';

const settings = (env: Record<string, string>) => eventsSettingsFrom(buildAppConfig(loadEnvironment(env)));

describe('webhook settings from the environment', () => {
  it('defaults: port 443, plus 80 where http is delivered to (not in production); 10 endpoints, 10 sends a minute, 2 slots per org', () => {
    expect(settings({})).toMatchObject({
      allowedPorts: [
        [443, 443],
        [80, 80],
      ],
      maxEndpointsPerOrg: 10,
      sendRatePerMinute: 10,
      orgConcurrency: 2,
    });
    const production = settings({
      NODE_ENV: 'production',
      DATABASE_URL: 'postgres://db/x',
      API_KEY_SECRET: 'k'.repeat(32),
      SESSION_JWT_SECRET: 's'.repeat(32),
    });
    expect(production.allowedPorts).toEqual([[443, 443]]);
  });

  it('reads WEBHOOK_ALLOWED_PORTS as ports and inclusive ranges, replacing the default', () => {
    expect(settings({ WEBHOOK_ALLOWED_PORTS: '443, 8443,9000-9099' }).allowedPorts).toEqual([
      [443, 443],
      [8443, 8443],
      [9000, 9099],
    ]);
  });

  it.each([['0'], ['65536'], ['9099-9000'], ['443,,80'], ['https'], ['80-']])(
    'refuses WEBHOOK_ALLOWED_PORTS=%s, naming the variable',
    (value) => {
      expect(() => loadEnvironment({ WEBHOOK_ALLOWED_PORTS: value })).toThrow(/WEBHOOK_ALLOWED_PORTS/);
    },
  );

  it.each([
    ['WEBHOOK_MAX_ENDPOINTS_PER_ORG', '0'],
    ['WEBHOOK_SEND_RATE_LIMIT', '-1'],
    ['WEBHOOK_ORG_CONCURRENCY', '5'],
  ])('refuses %s=%s', (name, value) => {
    expect(() => loadEnvironment({ [name]: value })).toThrow(new RegExp(name));
  });
});
