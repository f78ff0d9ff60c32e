import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { Webhook } from 'standardwebhooks';
import { startTestApp, type TestApp } from './test-app.js';

export interface ReceivedWebhook {
  headers: IncomingHttpHeaders;
  body: string;
  /** The payload as the Standard Webhooks library verified it; null when the signature did not verify. */
  verified: { type: string; timestamp: string; data: Record<string, any> } | null;
}

/**
 * A webhook receiver on 127.0.0.1 that verifies every message with the Standard Webhooks
 * reference library, as a customer's receiver would. `answer` decides each response's status.
 */
export class WebhookReceiver {
  readonly received: ReceivedWebhook[] = [];
  secret: string | null = null;
  answer: (n: number) => number = () => 200;
  private server: Server | null = null;
  private waiters: Array<() => void> = [];

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        let verified: ReceivedWebhook['verified'] = null;
        try {
          if (this.secret)
            verified = new Webhook(this.secret).verify(
              body,
              req.headers as Record<string, string>,
            ) as ReceivedWebhook['verified'];
        } catch {
          verified = null;
        }
        this.received.push({ headers: req.headers, body, verified });
        res.statusCode = this.answer(this.received.length);
        res.end('ok from the receiver');
        for (const w of this.waiters.splice(0)) w();
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as { port: number }).port}/hook`;
  }

  /** Waits until `predicate` holds over what was received (the test's own timeout bounds it). */
  async until(predicate: (received: ReceivedWebhook[]) => boolean): Promise<ReceivedWebhook[]> {
    while (!predicate(this.received)) {
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 200).unref();
      });
    }
    return this.received;
  }

  ofType(type: string): ReceivedWebhook[] {
    return this.received.filter((r) => r.verified?.type === type);
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

/** Settings for apps in webhook tests: the loopback receiver allowed, fast polls, short retries. */
export const WEBHOOK_TEST_ENV = {
  WEBHOOK_ALLOW_CIDRS: '127.0.0.1/32',
  // The receivers listen on ephemeral ports.
  WEBHOOK_ALLOWED_PORTS: '1024-65535',
  EVENTS_POLL_INTERVAL_MS: '200',
  WEBHOOK_RETRY_LIMIT: '2',
  WEBHOOK_RETRY_DELAY_SECONDS: '1',
  WEBHOOK_RETRY_DELAY_MAX_SECONDS: '1',
};

/**
 * The usual pair of a webhook test: a started receiver and an app that may deliver to it
 * (WEBHOOK_TEST_ENV). `close()` stops both, the app first so nothing is delivered to a closed port.
 */
export async function startWebhookApp(
  receiver: WebhookReceiver,
): Promise<{ t: TestApp; url: string; close: () => Promise<void> }> {
  const url = await receiver.start();
  const t = await startTestApp({ env: WEBHOOK_TEST_ENV });
  return {
    t,
    url,
    close: async () => {
      await t.close();
      await receiver.stop();
    },
  };
}
