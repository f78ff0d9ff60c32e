import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { childEnv, ROOT } from '../support/processes.js';

function start(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  return new Promise((ok) => {
    const child = spawn(process.execPath, [resolve(ROOT, 'dist/main.js')], { cwd: ROOT, env: childEnv(env) });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      ok({ code, stderr });
    });
  });
}

describe('starting the service with bad configuration', () => {
  it('stops at once with a message naming the bad variable', async () => {
    const res = await start({ PORT: 'eighty', DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/test' });
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/Invalid configuration:\n\s+PORT:/);
  });

  it('refuses DATABASE_MIGRATION_URL without DATABASE_URL: the embedded database sets its roles up itself', async () => {
    const res = await start({ DATABASE_MIGRATION_URL: 'postgres://postgres@127.0.0.1:5432/test' });
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/Invalid configuration:\n\s+DATABASE_MIGRATION_URL: needs DATABASE_URL/);
  });

  it('generates nothing in production: without a session secret it refuses to start', async () => {
    const res = await start({ NODE_ENV: 'production', DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/test' });
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/SESSION_JWT_SECRET: required/);
  });
});
