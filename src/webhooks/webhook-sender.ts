import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { loadEventPeers } from './event-peers.js';
import { OutboundGuard, REFUSED_PORT, RefusedDestinationError } from './outbound-guard.js';

export const MAX_KEPT_RESPONSE_BYTES = 1024;

export interface WebhookMessage {
  /** The event id: `webhook-id`, the same on every attempt so receivers can deduplicate. */
  id: string;
  body: string;
}

export interface SendResult {
  ok: boolean;
  status: number | null;
  latencyMs: number;
  /** At most 1 KB of the response body. */
  body: string | null;
  error: string | null;
}

export interface SenderOptions {
  guard: OutboundGuard;
  timeoutMs: number;
  /** Production: https only. */
  httpsOnly: boolean;
}

/**
 * Delivers one signed message per the Standard Webhooks specification, with the reference
 * library (`standardwebhooks`) signing, so receivers can verify with theirs. Never follows a
 * redirect (a 3xx is a failed attempt), stops after `timeoutMs`, keeps 1 KB of the answer.
 */
export class WebhookSender {
  constructor(private readonly options: SenderOptions) {}

  /**
   * One attempt, within `timeoutMs` from the start: resolving the name and the request share the
   * deadline. Every secret signs (during a rotation's overlap, the old and the new one), each
   * signature in the one `webhook-signature` header, space-separated, as Standard Webhooks allows.
   */
  async send(url: string, secrets: string[], message: WebhookMessage, now = new Date()): Promise<SendResult> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return { ok: false, status: null, latencyMs: 0, body: null, error: 'invalid URL' };
    }
    if (target.protocol !== 'https:' && (this.options.httpsOnly || target.protocol !== 'http:')) {
      return { ok: false, status: null, latencyMs: 0, body: null, error: 'only https URLs are delivered to' };
    }
    if (!this.options.guard.permitsPort(target)) {
      return { ok: false, status: null, latencyMs: 0, body: null, error: `refused: ${REFUSED_PORT}` };
    }
    let pinned: { address: string; family: number };
    try {
      pinned = await this.options.guard.resolve(target.hostname, this.options.timeoutMs);
    } catch (error) {
      const reason = error instanceof RefusedDestinationError ? error.message : 'the host name does not resolve';
      return { ok: false, status: null, latencyMs: elapsed(), body: null, error: `refused: ${reason}` };
    }
    const { Webhook } = await loadEventPeers();
    const remainingMs = Math.max(1, this.options.timeoutMs - elapsed());
    const signature = secrets.map((secret) => new Webhook(secret).sign(message.id, now, message.body)).join(' ');
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'keys-usage-identity-webhooks/1',
      'webhook-id': message.id,
      'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
      'webhook-signature': signature,
    };
    // The connection goes to the address checked above, whatever the name resolves to by now.
    const lookup: LookupFunction = (_hostname, options, callback) => {
      if ((options as { all?: boolean }).all)
        (callback as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [pinned]);
      else callback(null, pinned.address, pinned.family);
    };
    return new Promise<SendResult>((resolve) => {
      let settled = false;
      const finish = (result: Omit<SendResult, 'latencyMs'>) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve({ ...result, latencyMs: elapsed() });
      };
      const make = target.protocol === 'https:' ? httpsRequest : httpRequest;
      const req = make(target, { method: 'POST', headers, lookup, agent: false }, (res: IncomingMessage) => {
        const chunks: Buffer[] = [];
        let kept = 0;
        res.on('data', (chunk: Buffer) => {
          if (kept < MAX_KEPT_RESPONSE_BYTES) {
            chunks.push(chunk.subarray(0, MAX_KEPT_RESPONSE_BYTES - kept));
            kept += Math.min(chunk.length, MAX_KEPT_RESPONSE_BYTES - kept);
          }
          if (kept >= MAX_KEPT_RESPONSE_BYTES) res.destroy();
        });
        const done = () => {
          const status = res.statusCode ?? null;
          const ok = status !== null && status >= 200 && status < 300;
          finish({
            ok,
            status,
            body: Buffer.concat(chunks).toString('utf8'),
            error: ok ? null : `receiver answered ${status}`,
          });
        };
        res.on('end', done);
        res.on('close', done);
        res.on('error', done);
      });
      const timer = setTimeout(() => {
        req.destroy();
        finish({ ok: false, status: null, body: null, error: `no answer within ${this.options.timeoutMs} ms` });
      }, remainingMs);
      req.on('error', (error) =>
        finish({
          ok: false,
          status: null,
          body: null,
          error: `connection failed: ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
        }),
      );
      req.end(message.body);
    });
  }
}
