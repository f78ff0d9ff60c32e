import { HttpException, HttpStatus } from '@nestjs/common';

/** Works on a Fastify reply and an Express response alike: both have `header(name, value)`. */
export function setResponseHeader(response: unknown, name: string, value: string): void {
  const r = response as { header?: (n: string, v: string) => unknown; setHeader?: (n: string, v: string) => unknown };
  if (typeof r.header === 'function') r.header(name, value);
  else if (typeof r.setHeader === 'function') r.setHeader(name, value);
}

/**
 * The budget a 429 names: `key_window:<name>` (a key's own rate window), `plan_window:<name>`
 * (its plan's), `key_credits`, `usage:<meter>` (an org's daily meter), `auth_failures`, `mints`,
 * `leak_reports`, `webhook_sends`.
 */
export type BudgetName = string;

export interface TooManyRequestsOptions {
  /** What was spent, for the body's `budget`. */
  budget: BudgetName;
  message: string;
  /** Seconds until a retry can succeed (at least 1): the `Retry-After` header and the body's `retry_after`. */
  retryAfter: number;
}

/**
 * The one 429 of the service: every refusal for a spent budget throws it. Sets `Retry-After` on
 * the response (the one place it is written) and answers
 * `{ statusCode: 429, error: "Too Many Requests", message, budget, retry_after }`; where a rate
 * window applies, the budgets guard has written the RateLimit fields on the same response.
 */
export class TooManyRequests extends HttpException {
  readonly budget: BudgetName;
  readonly retryAfter: number;

  /** `response`: the reply to write `Retry-After` on; null where the thrower has none (then `onto` is called by who has it). */
  constructor(response: unknown, options: TooManyRequestsOptions) {
    const retryAfter = Math.max(1, Math.ceil(options.retryAfter));
    super(
      {
        statusCode: HttpStatus.TOO_MANY_REQUESTS,
        error: 'Too Many Requests',
        message: options.message,
        budget: options.budget,
        retry_after: retryAfter,
      },
      HttpStatus.TOO_MANY_REQUESTS,
    );
    this.budget = options.budget;
    this.retryAfter = retryAfter;
    if (response) this.onto(response);
  }

  /** Writes `Retry-After` on the response. */
  onto(response: unknown): void {
    setResponseHeader(response, 'Retry-After', String(this.retryAfter));
  }
}
