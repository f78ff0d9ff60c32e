import { describe, expect, it } from 'vitest';
import { useCliDatabase } from '../support/cli.js';
import { insertKeyRow } from '../support/factories.js';

/** `key update`: an operator changes a key's settings, audited with the CLI as actor. */
describe('the operator CLI: key update', () => {
  const on = useCliDatabase();
  const { cli } = on;

  it('disables a key and sets its credits, printing the key record, and audits it', async () => {
    const w = await on.seed.world('owner');
    const key = await insertKeyRow(on.db.pool, { userId: w.userId, orgId: w.orgId });
    const res = await cli(
      'key',
      'update',
      '--key',
      key.id,
      '--enabled',
      'false',
      '--credits',
      '{"remaining":10}',
      '--metadata',
      '{"team":"ops"}',
    );
    expect(res.code, res.stderr).toBe(0);
    expect(res.json()).toMatchObject({
      id: key.id,
      enabled: false,
      credits: { remaining: 10 },
      metadata: { team: 'ops' },
    });
    const { rows } = await on.db.pool.query(`SELECT actor_type, action FROM audit_events WHERE target_id = $1`, [
      key.id,
    ]);
    expect(rows).toEqual([{ actor_type: 'operator', action: 'api_key.updated' }]);
  });

  it('refuses bad settings as a usage error naming the flag, and an unknown key as a failure', async () => {
    const bad = await cli(
      'key',
      'update',
      '--key',
      '00000000-0000-4000-8000-000000000000',
      '--rate-limits',
      '[{"name":"d","limit":0,"window_seconds":1}]',
    );
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--rate-limits[0].limit');
    const none = await cli('key', 'update', '--key', '00000000-0000-4000-8000-000000000000', '--enabled', 'true');
    expect(none.code).toBe(1);
    expect(none.stderr).toContain('no key with id');
  });
});
