import { Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { GUARDS_METADATA } from '@nestjs/common/constants.js';
import { epochMs } from '../common/clock.js';
import { RouteMemo } from '../common/route-memo.js';
import { Settings } from '../settings/settings.js';
import { LastUsedWriter } from './last-used-writer.js';
import type { Principal } from './principal.js';
import { VerificationOutcomeRecorder } from './verification-outcome-recorder.js';

/** What the verifier saw of a key's last use, kept on its principal until the request is admitted. */
interface PendingUse {
  keyId: string;
  stored: Date | null;
  at: Date;
}

/**
 * Beside the principal, not on it: a property added and deleted on every key request changed the
 * object's shape on the hot path, and a principal compares and copies as its type declares.
 */
const pendingUses = new WeakMap<Principal, PendingUse>();
const RUNS = Symbol('kui.lastUseRuns');

type UseRequest = { user?: Principal; [RUNS]?: number };

/** Called by the verifier for a key it accepts: the use is recorded only if every guard admits the request. */
export function markPendingUse(principal: Principal, keyId: string, stored: Date | null, at: Date): void {
  pendingUses.set(principal, { keyId, stored, at });
}

/**
 * Records a key's use (`last_used_at`) once the request is admitted: listed last by the auth
 * decorators, after the credential, scope and key-limits guards, so a request any of them
 * refuses (a network outside `allowed_cidrs`, a missing scope, a spent key) is not a use and
 * cannot keep a leaked key looking fresh for the key policy's `stale_after_days`. A route that
 * lists the guards twice (a controller's decorator and a route's) records on the last listing.
 * The same point counts the request's verification outcome as `valid`: the org's meter of a
 * route's `@Charges` is spent before it (SpendGuard, which counts the meter's refusal). The
 * verifier holds a use for this guard only when the writer would write it (once a minute per key).
 */
@Injectable()
export class LastUseGuard implements CanActivate {
  /** How many times this guard is listed on the route (controller and handler). */
  private readonly listings = new RouteMemo((cls, handler) => {
    const count = (guards: unknown[] | undefined) => (guards ?? []).filter((g) => g === LastUseGuard).length;
    const listed =
      count(this.reflector.get<unknown[] | undefined>(GUARDS_METADATA, cls)) +
      count(this.reflector.get<unknown[] | undefined>(GUARDS_METADATA, handler));
    return Math.max(1, listed);
  });

  constructor(
    private readonly reflector: Reflector,
    private readonly writer: LastUsedWriter,
    private readonly outcomes: VerificationOutcomeRecorder,
    private readonly settings: Settings,
  ) {}

  canActivate(ctx: ExecutionContext): true {
    const request = ctx.getArgByIndex<UseRequest>(0);
    const user = request.user;
    if (!user || user.kind === 'session' || !user.keyId) return true;
    const runs = (request[RUNS] ?? 0) + 1;
    request[RUNS] = runs;
    if (runs !== this.listings.of(ctx)) return true;
    const pending = pendingUses.get(user);
    if (pending) {
      pendingUses.delete(user);
      this.writer.touch(pending.keyId, pending.stored, pending.at);
    }
    this.outcomes.count(user.keyId, 'valid', pending ? pending.at.getTime() : epochMs(this.settings.clock));
    return true;
  }
}
