import { Writable } from 'node:stream';
import { DataSource } from 'typeorm';
import { createApp } from '../../src/bootstrap.js';
import { postgresOptions } from '../../src/database/data-source-options.js';
import { createTestDatabase } from './database.js';
import { ApiClient } from './http.js';
import { Seeder } from './seed.js';
import { testConfig, type TestApp } from './test-app.js';

/** Everything the app's logger wrote, line by line. */
export class LogCapture extends Writable {
  readonly lines: string[] = [];
  private partial = '';

  override _write(chunk: Buffer | string, _encoding: string, done: () => void): void {
    const text = this.partial + String(chunk);
    const parts = text.split('\n');
    this.partial = parts.pop() ?? '';
    this.lines.push(...parts.filter(Boolean));
    done();
  }

  get text(): string {
    return this.lines.join('\n');
  }

  /** The JSON lines, parsed. */
  records(): Record<string, unknown>[] {
    return this.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  }
}

/**
 * startTestApp, but with the app's own logger (nestjs-pino) writing into a capture.
 * nestjs-pino fixes its logging configuration once per process: use one configuration per test file.
 */
export async function startLoggedApp(env: Record<string, string> = {}): Promise<TestApp & { logs: LogCapture }> {
  const db = await createTestDatabase();
  const config = testConfig(db.url, env);
  const logs = new LogCapture();
  const app = await createApp(config, {
    logDestination: logs,
    dataSource: () => new DataSource(postgresOptions(config, db.url)).initialize(),
  });
  await app.listen(0, '127.0.0.1');
  const url = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
  return {
    app,
    url,
    api: new ApiClient(url),
    db,
    seed: new Seeder(db.pool),
    config,
    logs,
    close: async () => {
      await app.close();
      await db.drop();
    },
  };
}
