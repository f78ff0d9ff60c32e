import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startLoggedApp, type LogCapture } from '../support/log-capture.js';
import type { TestApp } from '../support/test-app.js';

// A file of its own: nestjs-pino keeps one logging configuration per process (see logging.ts).
describe('request logs in development (pretty, LOG_LEVEL=debug)', () => {
  let t: TestApp & { logs: LogCapture };
  beforeAll(async () => {
    // LOG_FORMAT unset: NODE_ENV=development alone picks the pretty format.
    t = await startLoggedApp({ NODE_ENV: 'development', LOG_LEVEL: 'debug' });
  });
  afterAll(async () => t?.close());

  it('writes readable lines rather than JSON', async () => {
    const res = await t.api.get('/me', undefined, { 'x-request-id': 'pretty-1' });
    const ours = res.headers.get('x-request-id');
    const line = await vi.waitFor(() => {
      const found = t.logs.lines.find(
        (l) => l.includes(`"request_id":"${ours}"`) && l.includes('"client_request_id":"pretty-1"'),
      );
      expect(found).toBeDefined();
      return found!;
    });
    expect(line).toMatch(/INFO.*GET \/me 401 \d+ms/);
    expect(() => JSON.parse(line)).toThrow();
  });

  it('includes the debug-level probe lines when LOG_LEVEL=debug', async () => {
    await t.api.get('/health/live', undefined, { 'x-request-id': 'probe-pretty' });
    await vi.waitFor(() => {
      expect(t.logs.lines.some((l) => /DEBUG.*GET \/health\/live 200/.test(l) && l.includes('probe-pretty'))).toBe(
        true,
      );
    });
  });
});
