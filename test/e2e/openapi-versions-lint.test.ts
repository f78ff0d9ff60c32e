import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_VERSIONS } from '../../src/versioning/api-versions.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '../..');

/** Every API version's document passes Redocly's recommended rules, as the newest one does. */
describe('the OpenAPI document of each API version', () => {
  let t: TestApp;
  let dir: string;

  beforeAll(async () => {
    t = await startTestApp();
    dir = mkdtempSync(join(tmpdir(), 'kui-openapi-versions-'));
  });
  afterAll(async () => {
    await t?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it.each(API_VERSIONS.map((v) => v.date))(
    'passes `redocly lint` for %s',
    async (version) => {
      const res = await t.api.get(`/openapi.json?version=${version}`);
      expect(res.status).toBe(200);
      const file = join(dir, `openapi-${version}.json`);
      writeFileSync(file, res.text);
      const cli = resolve(ROOT, 'node_modules/@redocly/cli/bin/cli.js');
      const env = {
        PATH: process.env.PATH,
        HOME: dir,
        REDOCLY_TELEMETRY: 'off',
        REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true',
        CI: 'true',
      };
      const result = await run(process.execPath, [cli, 'lint', '--extends=recommended', '--format=json', file], {
        env,
        cwd: dir,
      }).catch((error: { stdout: string; stderr: string; code: number }) => error);
      const report = JSON.parse(result.stdout) as {
        totals: { errors: number };
        problems: { ruleId: string; severity: string; message: string }[];
      };
      expect(report.problems.filter((p) => p.severity === 'error').map((p) => `${p.ruleId}: ${p.message}`)).toEqual([]);
      expect(report.totals.errors).toBe(0);
    },
    60_000,
  );
});
