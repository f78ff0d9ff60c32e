/** The budgets' SpendGuard with scripted leases and meter, and a hand-made request and response: its unit specs' fixtures. */
import { EventEmitter } from 'node:events';
import { Controller, Get } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host.js';
import { testPrincipal } from './principal.js';
import { CountedOutcomes, testSettings } from './factories.js';
import type { Principal } from '../../src/auth/principal.js';
import { CreditLeases } from '../../src/budgets/credit-leases.js';
import { KeyLimitStore } from '../../src/budgets/key-limit.store.js';
import { PeriodicJobs } from '../../src/common/periodic-jobs.js';
import type { RateWindow } from '../../src/common/plan-rate-limits.js';
import { SpendGuard } from '../../src/budgets/spend.guard.js';
import { OrgMeter, type MeterCharge } from '../../src/budgets/org-meter.js';
import { ChargesMeta } from '../../src/budgets/charges.meta.js';
import { TooManyRequests } from '../../src/common/too-many-requests.js';
import type { KeyLimits } from '../../src/budgets/key-limits.js';
import { RateLimited } from '../../src/budgets/rate-limited.decorator.js';
import { WindowLeases } from '../../src/budgets/window-leases.js';

/** Routes as hosts declare them: plain, a costly window, and a charged one. */
@Controller('r')
export class Routes {
  @Get('plain')
  plain() {}

  @Get('costly')
  @RateLimited('search', { cost: 3 })
  costly() {}

  @Get('charged')
  @ChargesMeta({ meter: 'captures', count: 2 })
  charged() {}
}

/** An org meter that answers from a script and records what was charged and given back. */
export class ScriptedMeter extends OrgMeter {
  constructor(
    private readonly log: string[],
    private readonly answer: () => MeterCharge | Promise<MeterCharge> = () => ({ meter: 'captures' }),
  ) {
    super();
  }
  charge(principal: Principal, meter: string, count: number) {
    this.log.push(`charge ${principal.orgId} ${meter} ${count}`);
    return this.answer();
  }
  giveBack(charge: MeterCharge) {
    this.log.push(`meter back ${(charge as { meter: string }).meter}`);
  }
}

export const spentMeter = (response: unknown) =>
  new TooManyRequests(response, { budget: 'usage:captures', message: 'captures spent', retryAfter: 60 });

export const WINDOWS = [
  { name: 'default', limit: 10, window_seconds: 1 },
  { name: 'search', limit: 5, window_seconds: 1 },
];

/** Leases that answer from a script and record what was taken and given back. */
export function fakes(
  window: (name: string) => number | Promise<number>,
  credit: () => number | Promise<number> = () => 0,
  settings = testSettings(),
  outcomes = new CountedOutcomes(),
  meter?: (log: string[]) => OrgMeter,
) {
  const log: string[] = [];
  class ScriptedWindows extends WindowLeases {
    override takeAt(_k: string, windows: readonly RateWindow[], i: number, cost: number) {
      log.push(`take ${windows[i].name} ${cost}`);
      return window(windows[i].name);
    }
    override giveBack(_k: string, w: RateWindow, cost: number) {
      log.push(`back ${w.name} ${cost}`);
    }
    override remaining() {
      return 1;
    }
    override resetIn() {
      return 700;
    }
  }
  class ScriptedCredits extends CreditLeases {
    override take(_k: string, _c: unknown, cost: number) {
      log.push(`credits ${cost}`);
      return credit();
    }
    override giveBack(_k: string, _c: unknown, cost: number) {
      log.push(`credits back ${cost}`);
    }
  }
  const store = new KeyLimitStore(undefined as never);
  const sut = new SpendGuard(
    new Reflector(),
    new ScriptedWindows(store, settings.clock),
    new ScriptedCredits(store, new PeriodicJobs()),
    meter ? meter(log) : new ScriptedMeter(log),
    settings,
    outcomes.recorder,
  );
  return { log, sut, outcomes };
}

/** A raw Node response, as far as the guard uses it: headers, status, 'close' and whether it finished. */
export class FakeResponse extends EventEmitter {
  /** By lower-cased name, as Node and Fastify keep them (names are case-insensitive). */
  headers: Record<string, string> = {};
  statusCode = 200;
  writableFinished = false;
  destroyed = false;
  setHeader(n: string, v: string) {
    this.headers[n.toLowerCase()] = v;
  }
  /** Ends the answer as Node does: finished, then 'close'. */
  end(status: number) {
    this.statusCode = status;
    this.writableFinished = true;
    this.emit('close');
  }
}

export function context(
  limits: KeyLimits | undefined,
  handler: 'plain' | 'costly' | 'charged' = 'plain',
  ip = '203.0.113.5',
  kind: Principal['kind'] = 'api_key',
) {
  const principal: Principal = {
    ...testPrincipal({ kind, plan: 'free', orgId: 'o1', orgRole: 'owner' }),
    keyId: kind === 'session' ? undefined : 'k1',
    limits,
  };
  const raw = new FakeResponse();
  // Fastify's reply: the raw Node response under `.raw`.
  const reply = { raw, header: (n: string, v: string) => raw.setHeader(n, v) };
  return {
    ctx: new ExecutionContextHost([{ user: principal, ip }, reply], Routes, Routes.prototype[handler]),
    headers: raw.headers,
    raw,
  };
}
