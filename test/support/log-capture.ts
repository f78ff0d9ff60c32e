import { Writable } from 'node:stream';
import { startTestApp, type TestApp } from './test-app.js';

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
  const logs = new LogCapture();
  return { ...(await startTestApp({ env, logDestination: logs })), logs };
}
